"""What the model clients (Anthropic, OpenAI-compatible) share: retries on transient failures, clear errors for bad keys
and unknown models,
and images as base64."""

from __future__ import annotations

import base64
import mimetypes
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import tenacity

from ..config import DEFAULT_REPLY_TOKENS, Settings
from ..errors import ConfigError

T = TypeVar("T")

TRANSIENT_STATUS = {408, 409, 429}
"""Besides every 5xx: request timeout, conflict (retried by both SDKs), rate limit."""


def is_transient(exc: BaseException) -> bool:
    """A rate limit, a server error, a timeout or a dropped connection: worth another try."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUS or status >= 500
    name = type(exc).__name__
    return name in {"APITimeoutError", "APIConnectionError"}


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds the server asked to wait (Retry-After / retry-after-ms), if it said."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after") is not None:
            return float(headers["retry-after"])
    except (TypeError, ValueError):
        return None
    return None


class WaitPolicy:
    """Wait what the server asked for (capped), else exponential backoff with jitter."""

    def __init__(self, base: float = 1.0, cap: float = 30.0):
        self.base, self.cap = base, cap

    def __call__(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = retry_after(exc)
        if asked is not None:
            return min(max(asked, 0.0), self.cap)
        return min(self.cap, self.base * 2 ** (state.attempt_number - 1)) * (0.5 + random.random() / 2)


class ClientOptions(TypedDict, total=False):
    """What every model client's constructor takes besides its model, key and SDK client (ModelClient's defaults)."""

    base_url: str | None
    """The API's URL: a proxy, a fake, or (OpenAI) any compatible server."""
    max_output_tokens: int
    timeout: float
    """Seconds one request may take (less when the query's deadline is nearer)."""
    attempts: int
    """Tries of one request, retries on transient failures included."""
    wait: WaitPolicy | None


class ModelClient:
    """What the model clients share: request limits, the query's deadline, and one guarded way to call the API."""

    SETTING_OPTIONS: dict[str, str] = {"max_output_tokens": "reply_tokens"}
    """Constructor option -> the setting it comes from when `from_settings` is not given it explicitly."""
    model: str
    """The model's name, set by each client's constructor."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        max_output_tokens: int = DEFAULT_REPLY_TOKENS,
        timeout: float = 120.0,
        attempts: int = 5,
        wait: WaitPolicy | None = None,
    ):
        self.base_url = base_url
        self.max_output_tokens = max_output_tokens
        self.attempts = attempts
        self.wait = wait
        self.timeout = timeout
        self.deadline: float | None = None
        """time.monotonic() by which the query must end; the agent loop sets it before each turn."""

    @classmethod
    def options_from(cls, settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
        """`options` completed from the settings named in SETTING_OPTIONS (explicit options win)."""
        taken = {
            option: getattr(settings, name)
            for option, name in cls.SETTING_OPTIONS.items()
            if option not in options and getattr(settings, name) is not None
        }
        return {**taken, **options}

    def call_api(self, create: Callable[..., T], request: dict[str, Any], *, provider: str, key_env: str) -> T:
        """`create(**request)` with retries, bounded by the deadline; a bad key or model becomes a ConfigError."""
        try:
            return call_with_retries(
                lambda: create(**request, timeout=request_timeout(self.timeout, self.deadline)),
                attempts=self.attempts,
                wait=self.wait,
                deadline=self.deadline,
            )
        except Exception as exc:
            error = config_error(exc, provider=provider, model=self.model, base_url=self.base_url, key_env=key_env)
            if error is not None:
                raise error from exc
            raise


def request_timeout(default: float, deadline: float | None) -> float:
    """Seconds one request may take: the client's own timeout, or less when the query's deadline is nearer."""
    if deadline is None:
        return default
    return max(1.0, min(default, deadline - time.monotonic()))


def call_with_retries(
    fn: Callable[[], T],
    *,
    attempts: int = 5,
    wait: WaitPolicy | None = None,
    on_retry: Callable[[BaseException, float], None] | None = None,
    deadline: float | None = None,
) -> T:
    """`fn()` retried on transient provider errors; other errors (and the last transient one) propagate.

    No retry starts after `deadline` (time.monotonic()): a query's wall-time limit bounds its model calls too."""
    waiter = wait or WaitPolicy()

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if on_retry and state.outcome is not None and state.next_action is not None:
            error = state.outcome.exception()
            assert error is not None  # only exceptions are retried (retry_if_exception)
            on_retry(error, state.next_action.sleep)

    stop: tenacity.stop.stop_base = tenacity.stop_after_attempt(attempts)
    if deadline is not None:
        # tenacity's hints take only stop_base on the right of |; its stop_any calls any callable alike
        stop = stop | (lambda state: time.monotonic() >= deadline)  # type: ignore[operator]
    retrying = tenacity.Retrying(
        stop=stop, wait=waiter, retry=tenacity.retry_if_exception(is_transient), reraise=True, before_sleep=before_sleep
    )
    return retrying(fn)


def config_error(
    exc: BaseException, *, provider: str, model: str, base_url: str | None, key_env: str
) -> ConfigError | None:
    """A ConfigError that says what to fix when `exc` means a bad key, no access, or an unknown model."""
    status = getattr(exc, "status_code", None)
    detail = _detail(exc)
    where = f" at {base_url}" if base_url else ""
    if status == 401:
        return ConfigError(
            f"{provider}{where} rejected the API key ({detail}): set a valid key in {key_env} "
            f"(`runbook config show` shows which one is used)"
        )
    if status == 403:
        return ConfigError(
            f"{provider}{where} refused access to model {model!r} ({detail}): use a key with access "
            f"to it, or pick another model with RUNBOOK_MODEL"
        )
    if status == 404:
        return ConfigError(
            f"{provider}{where} has no model {model!r} ({detail}): set RUNBOOK_MODEL (or "
            f"RUNBOOK_READER_MODEL for the reader) to a model it serves, and check the base URL"
        )
    if status == 400 and "model" in detail.lower() and ("not" in detail.lower() or "invalid" in detail.lower()):
        return ConfigError(
            f"{provider}{where} does not accept model {model!r} ({detail}): set RUNBOOK_MODEL to a model it serves"
        )
    return None


def _detail(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    return str(exc)[:300]


def image_base64(path: str) -> tuple[str, str]:
    """(media type, base64 data) of an image file."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"image {path} does not exist")
    media = mimetypes.guess_type(file.name)[0] or "image/png"
    return media, base64.b64encode(file.read_bytes()).decode("ascii")
