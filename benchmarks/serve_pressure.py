"""What `benchmarks/serve_load.py` puts on a server besides its normal clients, and how it watches the server:
slow clients (a slowloris, in a process of its own), many open streamed trajectories, and the server's RSS."""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections import Counter
from pathlib import Path


class RssSampler:
    """The server's resident memory, read from /proc every 0.5 s."""

    def __init__(self, pid: int):
        self.pid, self.samples = pid, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
            self.samples.append(kb / 1024)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    first = property(lambda self: self.samples[0] if self.samples else 0.0)
    peak = property(lambda self: max(self.samples, default=0.0))
    last = property(lambda self: self.samples[-1] if self.samples else 0.0)


class SlowClients:
    """`count` connections that each send a request one byte every `trickle` seconds, reconnecting when closed; in
    a process of their own, so that they take no time from the normal clients' threads."""

    def __init__(self, url: str, args: argparse.Namespace):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.count, self.trickle = args.slow, args.trickle
        self._stopping, self._results = context.Event(), context.Queue()
        port = int(url.rsplit(":", 1)[1])
        self._process = context.Process(
            target=_slow_clients, args=(port, self.count, self.trickle, self._stopping, self._results)
        )

    def start(self) -> None:
        self._process.start()
        time.sleep(min(10.0, self.count / 300))  # let them connect before the normal clients start

    def stop(self) -> None:
        self._stopping.set()
        self.results = self._results.get(timeout=self.trickle + 30)
        self._process.join(10)

    def report(self) -> None:
        print(
            f"slow clients: {self.count} trickling a byte every {self.trickle:g} s; {self.results['connects']} "
            f"connections made, at most {self.results['peak']} open at once; the server answered them: "
            f"{self.results['answers']}"
        )


def _slow_clients(port: int, count: int, trickle: float, stopping, results) -> None:
    """The slow clients' process: connect, trickle, note what the server answered, reconnect; until `stopping`."""
    tally = {"connects": 0, "open": 0, "peak": 0, "answers": Counter()}

    async def trickling(reader, writer) -> None:
        request = b"GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 200 + b"\r\n\r\n"
        for byte in request:
            if stopping.is_set():
                return
            try:
                writer.write(bytes([byte]))
                await writer.drain()
                answer = await asyncio.wait_for(reader.read(64), timeout=trickle)
            except TimeoutError:
                continue  # nothing from the server: the next byte
            except OSError:
                tally["answers"]["reset"] += 1
                return
            tally["answers"][answer.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"] += 1
            return

    async def one(n: int) -> None:
        await asyncio.sleep(n * 0.003)
        while not stopping.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError as exc:
                tally["answers"][f"connect failed: {exc.strerror}"] += 1
                await asyncio.sleep(1)
                continue
            tally["connects"] += 1
            tally["open"] += 1
            tally["peak"] = max(tally["peak"], tally["open"])
            try:
                await trickling(reader, writer)
            finally:
                tally["open"] -= 1
                writer.close()

    async def everyone() -> None:
        await asyncio.gather(*(one(n) for n in range(count)), return_exceptions=True)

    asyncio.run(everyone())
    results.put({**tally, "answers": dict(tally["answers"])})


class ManyStreams:
    """`count` streamed trajectories opened (one step each) and left open while the normal clients run."""

    def __init__(self, url: str, args: argparse.Namespace):
        self.url, self.count = url, args.open
        self.outcomes: Counter[int] = Counter()

    def start(self) -> None:
        import httpx

        started = time.perf_counter()
        with httpx.Client(base_url=self.url, timeout=60) as http:
            for n in range(self.count):
                tid = f"held-open-{n}"
                opened = http.post("/trajectories", json={"id": tid, "stream": True, "goal": f"Held open {n}"})
                self.outcomes[opened.status_code] += 1
                if opened.status_code == 201:
                    http.post(f"/trajectories/{tid}/states", json={"url": f"http://shop/held/{n}"})
        self.seconds = time.perf_counter() - started

    def stop(self) -> None:
        pass

    def report(self) -> None:
        print(
            f"open streams: {self.count} opened in {self.seconds:.1f} s, the server answered "
            f"{dict(self.outcomes)} (201 accepted, 503 at its limit), left open during the load"
        )
