"""What a streamed step costs as a trajectory grows: N steps appended to one open trajectory through the service
(`visible="step"` by default, or "close"), each with a 200-line page. Prints, per window of steps, the median wall
time and CPU time (the appending thread's) of an append, then how many background re-inserts ran and how long the
last one took to catch up after the last step.

usage: python benchmarks/stream_appends.py [--steps 300] [--visible step|close]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--visible", choices=("step", "close"), default="step")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from runbook.serve import MemoryService

    service = MemoryService(Path(tempfile.mkdtemp(prefix="runbook-appends-")) / "store", create=True)
    reinserts = []
    reinsert = service._reinsert
    service.step_inserts._reinsert = lambda tid: reinserts.append(tid) or reinsert(tid)
    service.open_trajectory("live", visible=args.visible, goal="Edit a product")
    page = "\n".join(f"\t[{i}] link 'Menu item {i}'" for i in range(200))
    wall, cpu = [], []
    for i in range(args.steps):
        start_wall, start_cpu = time.perf_counter(), time.thread_time()
        step = {"url": f"http://shop/p/{i}", "accessibility_tree": f"RootWebArea 'Page {i}'\n{page}"}
        service.append_state("live", {**step, "action": f"click('{i}')"})
        wall.append(time.perf_counter() - start_wall)
        cpu.append(time.thread_time() - start_cpu)
    settled = time.perf_counter()
    service.settle()
    settled = time.perf_counter() - settled
    window = max(1, args.steps // 6)
    for first in range(0, args.steps, window):
        part = slice(first, first + min(10, window))
        print(
            f"steps {first}-{first + min(10, window) - 1}: append median {statistics.median(wall[part]) * 1000:.1f} ms"
            f" wall, {statistics.median(cpu[part]) * 1000:.1f} ms CPU"
        )
    stored = service.store.row("live")
    print(
        f"{args.steps} appends in {sum(wall):.1f} s; background re-inserts: {len(reinserts)}; the store showed "
        f"{stored.n_states if stored else 0} states {settled:.1f} s after the last append"
    )
    service.close()


if __name__ == "__main__":
    main(sys.argv[1:])
