"""Making sure a sandbox never outlives its query: stop every live one at interpreter exit, and turn SIGTERM and
SIGHUP into a normal exit so context managers run (SIGINT already raises KeyboardInterrupt)."""

from __future__ import annotations

import atexit
import signal
import threading

_live: dict[int, object] = {}
_lock = threading.Lock()
_installed = False


def register(sandbox) -> None:
    with _lock:
        _live[id(sandbox)] = sandbox
    _install()


def unregister(sandbox) -> None:
    with _lock:
        _live.pop(id(sandbox), None)


def live_sandboxes() -> list:
    with _lock:
        return list(_live.values())


def stop_all() -> None:
    """Stop every sandbox still registered (a query that died before its own cleanup)."""
    for sandbox in live_sandboxes():
        try:
            sandbox.stop()
        except BaseException:  # at exit, one failure must not keep the others alive
            pass


def _exit_on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(stop_all)
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread; atexit still covers a normal exit
    for sig in (signal.SIGTERM, signal.SIGHUP):
        # never override a handler the application chose (a server, a test runner)
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _exit_on_signal)
