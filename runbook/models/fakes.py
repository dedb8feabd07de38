"""Fake model servers that ship with runbook: real HTTP on 127.0.0.1 replaying a script, so users and tests drive
the real SDK clients and the real loop without a network or a key.

    from runbook.models.fakes import FakeOpenAIServer, call, finish
    with FakeOpenAIServer([call("search", pattern="Add to Cart"), finish("found it", [("wa-1", 2, 3)])]) as server:
        model = OpenAIModel("fake-model", base_url=server.base_url, api_key="test")

`FakeOpenAIServer` answers POST /v1/chat/completions and GET /v1/models; `FakeAnthropicServer` answers
POST /v1/messages. Each request takes the next scripted Reply; `fail(429)` scripts an HTTP error instead.
Every request body is kept in `server.requests` for assertions. `respond=` (request body -> Reply) answers each
request from what it asks instead of from a script: concurrent callers (a bench's reader and judge running several
questions at once) get the reply that belongs to their request. runbook.policies.scripted.ScriptedPolicy replays the
same script with no
HTTP at all.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted model turn: text and tool calls, or an HTTP error."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    """(tool name, arguments); a string is sent as the raw arguments text (to script malformed JSON)."""
    status: int = 200
    """An error status (429, 500, 401, 404, ...) makes the server answer with a provider-shaped error body."""
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = None
    """(input, output) tokens to report; by default estimated from the request and reply sizes."""
    delay: float = 0.0
    """Seconds to wait before answering."""


def call(name: str, **arguments: Any) -> Reply:
    """A turn with one tool call."""
    return Reply(calls=[(name, arguments)])


def calls(*pairs: tuple[str, dict[str, Any]], text: str = "") -> Reply:
    """A turn with several tool calls."""
    return Reply(text=text, calls=list(pairs))


def raw_call(name: str, arguments_text: str) -> Reply:
    """A turn whose tool call carries `arguments_text` verbatim (e.g. broken JSON)."""
    return Reply(calls=[(name, arguments_text)])


def text(content: str) -> Reply:
    """A turn with text and no tool call."""
    return Reply(text=content)


def finish(analysis: str, spans: Iterable[tuple[str, int, int]]) -> Reply:
    """A turn calling finish with (trajectory_id, start, end) spans."""
    return call(
        "finish",
        analysis=analysis,
        spans=[{"trajectory_id": t, "start_state_index": a, "end_state_index": b} for t, a, b in spans],
    )


def fail(status: int, message: str = "", *, retry_after: float | None = 0) -> Reply:
    """An HTTP error turn; 429 and 5xx carry `retry-after` so clients retry at once."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None and (status == 429 or status >= 500) else {}
    return Reply(status=status, error=message or f"scripted error {status}", headers=headers)


class _QuietServer(ThreadingHTTPServer):
    """A client that hung up (a timeout test) is expected here, not worth a traceback."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class FakeServer:
    """A loopback HTTP server replaying `script`; subclasses speak one provider's protocol."""

    path = "/"

    def __init__(
        self,
        script: Iterable[Reply] = (),
        *,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
        repeat_last: bool = False,
        respond: Callable[[dict[str, Any]], Reply] | None = None,
    ):
        self.script = deque(script)
        self.respond = respond
        """When set, every request is answered by respond(request body); the script is not used."""
        self.api_key = api_key
        """When set, requests with another key get 401."""
        self.models = set(models) if models is not None else None
        """When set, requests for another model get 404."""
        self.repeat_last = repeat_last
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._last: Reply | None = None
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def next_reply(self, request: dict[str, Any] | None = None) -> Reply | None:
        if self.respond is not None:
            return self.respond(request or {})
        with self._lock:
            if self.script:
                self._last = self.script.popleft()
                return self._last
            return self._last if self.repeat_last else None

    # -- protocol hooks -----------------------------------------------------------------------------------------
    def handle_get(self, path: str) -> tuple[int, dict[str, Any]]:
        return 404, self.error_body(404, f"no route {path}")

    def key_of(self, headers: dict[str, str]) -> str | None:
        raise NotImplementedError

    def reply_body(self, reply: Reply, request: dict[str, Any], n: int) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def answer(self, path: str, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict, dict]:
        """(status, body, extra headers) for one POST."""
        if path.rstrip("/") != self.path:
            return 404, self.error_body(404, f"no route {path}"), {}
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            n = len(self.requests)
        if self.api_key is not None and self.key_of(headers) != self.api_key:
            return 401, self.error_body(401, "invalid api key"), {}
        if self.models is not None and request.get("model") not in self.models:
            return 404, self.error_body(404, f"model {request.get('model')!r} not found"), {}
        reply = self.next_reply(request)
        if reply is None:
            return 400, self.error_body(400, f"fake server: the script ran out after {n - 1} replies"), {}
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            return reply.status, self.error_body(reply.status, reply.error), reply.headers
        return 200, self.reply_body(reply, request, n), reply.headers

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def do_GET(self) -> None:
                status, body = fake.handle_get(self.path)
                self._send(status, body, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    request = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, fake.error_body(400, "request body is not JSON"), {})
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                self._send(*fake.answer(self.path, request, headers))

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _estimate_usage(reply: Reply, request: dict[str, Any]) -> tuple[int, int]:
    if reply.usage:
        return reply.usage
    return len(json.dumps(request)) // 4, max(1, (len(reply.text) + len(json.dumps(reply.calls))) // 4)


def _bearer(headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


class FakeOpenAIServer(FakeServer):
    """Speaks OpenAI's chat completions API; `base_url` ends in /v1 as the openai client expects."""

    path = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def handle_get(self, path: str) -> tuple[int, dict[str, Any]]:
        if path.rstrip("/") == "/v1/models":
            names = sorted(self.models) if self.models is not None else ["fake-model"]
            return 200, {
                "object": "list",
                "data": [{"id": m, "object": "model", "owned_by": "runbook-fake"} for m in names],
            }
        return super().handle_get(path)

    def key_of(self, headers: dict[str, str]) -> str | None:
        return _bearer(headers)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "code": kind, "param": None}}

    def reply_body(self, reply: Reply, request: dict[str, Any], n: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{n}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": _arguments_text(args)},
                }
                for i, (name, args) in enumerate(reply.calls)
            ]
        prompt, completion = _estimate_usage(reply, request)
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if reply.calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }


class FakeAnthropicServer(FakeServer):
    """Speaks Anthropic's messages API; reports cache reads once a cached system prompt is seen again."""

    path = "/v1/messages"

    def key_of(self, headers: dict[str, str]) -> str | None:
        return headers.get("x-api-key") or _bearer(headers)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def reply_body(self, reply: Reply, request: dict[str, Any], n: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        for i, (name, args) in enumerate(reply.calls):
            # the real API always sends an object; a scripted string stands for a model that broke its JSON
            content.append({"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": args})
        prompt, completion = _estimate_usage(reply, request)
        cached = self._cached_tokens(request)
        return {
            "id": f"msg_fake_{n}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "fake-model"),
            "content": content,
            "stop_reason": "tool_use" if reply.calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(0, prompt - cached),
                "output_tokens": completion,
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": 0,
            },
        }

    def _cached_tokens(self, request: dict[str, Any]) -> int:
        system = request.get("system")
        if not isinstance(system, list) or not any("cache_control" in block for block in system):
            return 0
        earlier = [r.get("system") for r in self.requests[:-1]]
        return len(json.dumps(system)) // 4 if system in earlier else 0
