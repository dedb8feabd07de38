"""What a bench run reports as it goes: the `Progress` protocol, reported to alike by runner.py (threads) and cluster.py
(Ray actors)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """What the runner reports as it goes (the CLI draws it with rich; tests may collect it)."""

    def note(self, text: str) -> None: ...

    def begin(self, label: str, total: int, done: int) -> None: ...

    def advance(self, label: str) -> None: ...


class SilentProgress:
    """Reports nothing: a run without a screen."""

    def note(self, text: str) -> None:
        pass

    def begin(self, label: str, total: int, done: int) -> None:
        pass

    def advance(self, label: str) -> None:
        pass
