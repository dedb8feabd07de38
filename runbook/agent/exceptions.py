"""Why an agent loop stops: each stop is an exception that carries its reason.

    AgentStop                 the loop ends; `reason` says why in one line
    ├── Finished              the policy called `finish` (carries the analysis and spans)
    ├── PolicyFailed          the policy could not produce a next step (the provider kept failing)
    ├── Stuck                 the policy kept repeating a call it was told would not change
    └── LimitReached          a limit ran out before `finish`
        ├── StepLimit         too many policy steps
        ├── TimeLimit         too much wall time
        ├── TokenLimit        too many model tokens (input + output)
        └── CostLimit         too much money spent, where the model's price is known

A bad key or an unknown model is not a stop: the policy raises runbook.errors.ConfigError, which the caller sees.
"""

from __future__ import annotations

from .types import Span


class AgentStop(Exception):
    """The loop ends."""

    kind = "stop"

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Finished(AgentStop):
    """The policy called `finish`."""

    kind = "finished"

    def __init__(self, analysis: str, spans: list[Span], recall: list[str] | None = None):
        kept = f" and {len(recall)} recall hit(s)" if recall else ""
        super().__init__(f"finish called with {len(spans)} span(s){kept}")
        self.analysis = analysis
        self.spans = spans
        self.recall = list(recall or [])


class PolicyFailed(AgentStop):
    """The policy raised an error it could not retry its way out of."""

    kind = "policy_failed"


class Stuck(AgentStop):
    """Every call of several turns in a row was a repeat the loop refused to run (a weak model in a rut)."""

    kind = "stuck"


class LimitReached(AgentStop):
    """A limit ran out before `finish`."""

    kind = "limit"


class StepLimit(LimitReached):
    kind = "steps"


class TimeLimit(LimitReached):
    kind = "time"


class TokenLimit(LimitReached):
    kind = "tokens"


class CostLimit(LimitReached):
    kind = "cost"
