"""The canonical Trajectory and State: what every reader produces and the store keeps."""

from __future__ import annotations

import difflib
import logging
import os
import unicodedata
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..errors import InputError
from .screenshots import locate, names_no_screenshot
from .times import check_time_order, check_timestamp

log = logging.getLogger(__name__)

MAX_PAGE_CHARS = 1_000_000
"""A state's page text is cut to at most this many characters, so that the work an insert and a query do per state
stays bounded (a 50 MB page took 8.2 s and 1 GB to insert, and 4.9 s and 500 MB per query). The largest page
among the 7,803 WebArena states in the shared data has 351,551 characters."""
_CUT_SAID: set[tuple[str, int, int]] = set()


@dataclass(slots=True)
class State:
    """One page the agent observed, and the action it chose next."""

    index: int
    """0-based position in the trajectory."""
    url: str = ""
    title: str = ""
    text: str = ""
    """The page as the agent saw it: accessibility tree or DOM text."""
    action: str | None = None
    """The NEXT action the agent took after observing this state (None on a final state with no action)."""
    action_error: str = ""
    """The error raised by executing this state's action, empty if none."""
    thought: str | None = None
    timestamp: str | None = None
    """ISO-8601 UTC, as recorded."""
    screenshot: str | None = None
    """Absolute path of the source image while reading; store-relative (screenshots/0003.jpg) once stored."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "state_index": self.index,
            "step": self.index,
            "url": self.url,
            "title": self.title,
            "accessibility_tree": self.text,
            "thought": self.thought,
            "action": self.action,
            "action_error": self.action_error,
            "timestamp": self.timestamp,
            "screenshot": self.screenshot,
        }


@dataclass(slots=True)
class Trajectory:
    """One episode of a web agent: a goal, the states it saw, and how it ended."""

    id: str
    states: list[State]
    goal: str = ""
    site: str = ""
    domain: str = "web"
    start_url: str = ""
    outcome: str | None = None
    source: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level fields no reader knows, kept verbatim."""

    def __post_init__(self) -> None:
        for state in self.states:
            if len(state.text) > MAX_PAGE_CHARS:
                said = (self.id, state.index, len(state.text))
                if said not in _CUT_SAID:  # an insert reads its input twice (validation first): said once
                    _CUT_SAID.add(said)
                    log.warning(
                        "trajectory %s, state %d: its page has %s characters; it is cut to at most %s",
                        self.id,
                        state.index,
                        f"{len(state.text):,}",
                        f"{MAX_PAGE_CHARS:,}",
                    )
                state.text = cut_page(state.text)

    @property
    def succeeded(self) -> bool | None:
        """True/False from the outcome text ('success...' / 'failure...'), None when unknown."""
        if not self.outcome:
            return None
        head = self.outcome.strip().lower()
        if head.startswith(("success", "passed", "pass", "true", "1")):
            return True
        if head.startswith(("fail", "false", "0", "error")):
            return False
        return None

    @property
    def first_timestamp(self) -> str | None:
        return next((s.timestamp for s in self.states if s.timestamp), None)

    @property
    def last_timestamp(self) -> str | None:
        return next((s.timestamp for s in reversed(self.states) if s.timestamp), None)

    def to_dict(self) -> dict[str, Any]:
        """The project's JSONL schema (a superset of LongMemEval-V2's trajectory schema)."""
        out: dict[str, Any] = {
            "id": self.id,
            "domain": self.domain,
            "site": self.site,
            "goal": self.goal,
            "start_url": self.start_url,
            "outcome": self.outcome,
        }
        if self.source is not None:
            out["source"] = self.source
        out.update(self.extra)
        out["states"] = [s.to_dict() for s in self.states]
        return out


def cut_page(text: str) -> str:
    """`text` cut at a line break to fit MAX_PAGE_CHARS with a last line that says so (a page cut once is not cut
    again when it is read back)."""
    if len(text) <= MAX_PAGE_CHARS:
        return text
    kept = text[: MAX_PAGE_CHARS - 200]
    if "\n" in kept[-10_000:]:
        kept = kept[: kept.rindex("\n")]
    return f"{kept}\n[runbook: the page is cut here; it had {len(text):,} characters, the first {len(kept):,} are kept]"


def _text(value: Any, *, where: dict, name: str, allow_none: bool = True) -> str | None:
    if value is None:
        if allow_none:
            return None
        raise InputError("is missing", field=name, **where)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {type(value).__name__}", field=name, **where)
    return value


def _index(value: Any, *, where: dict, name: str) -> int:
    if isinstance(value, bool):
        raise InputError("must be an integer, got bool", field=name, **where)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise InputError(f"must be an integer, got {value!r}"[:120], field=name, **where)


def _position(value: Any, pos: int, *, lenient: bool, where: dict, name: str) -> int:
    """A state's index: its position, which `state_index` must repeat (LongMemEval-V2's harness takes the position
    and ignores it: so does `lenient`)."""
    if lenient:
        if value != pos:
            log.info(
                "trajectory %s: %s is %r at position %d, read by position as LongMemEval-V2's harness does",
                where.get("trajectory_id"),
                name,
                value,
                pos,
            )
        return pos
    idx = _index(value, where=where, name=name)
    if idx != pos:
        raise InputError(f"is {idx}, expected {pos} (states must be in order, 0-based)", field=name, **where)
    return idx


_TOP_KNOWN = {"id", "domain", "site", "goal", "start_url", "outcome", "source", "states", "trajectory_id"}
KNOWN_EXTRA = {
    "received_times": "runbook's servers: the states whose time is the server's receive time",
    "metadata": "LongMemEval-V2: the content form's goal and environment, kept when a trajectory carries it",
}
"""Top-level fields beyond the schema that a format of its own writes: accepted and kept as they are."""
STATE_KNOWN = (
    "state_index",
    "step",
    "url",
    "title",
    "accessibility_tree",
    "text",
    "page_text",
    "thought",
    "thoughts",
    "action",
    "action_error",
    "timestamp",
    "screenshot",
)
"""A state's fields: runbook's, and LongMemEval-V2's other names (text, thoughts; step is its own numbering)."""
MAX_NESTING = 64
"""How deep a free-form value (source, metadata) may nest: deeper ones are refused, naming the field (at 255 levels
the store's JSON writer gave up with a traceback, and a server answered 500)."""
_CONTROL_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}
"""Control and format characters, line and paragraph separators: never part of a key typed on a command line."""


def check_id(trajectory_id: str, *, note: str = "", **where: Any) -> str:
    """`trajectory_id` when it has no control character; InputError on field 'id' otherwise (ids are keys on the
    command line, in file names, and in one-line headers and summaries)."""
    for pos, ch in enumerate(trajectory_id):
        if unicodedata.category(ch) in _CONTROL_CATEGORIES:
            raise InputError(
                f"has the control character U+{ord(ch):04X} at position {pos}{note}: ids are keys "
                f"typed on the command line and used in file names; remove it from the id",
                field="id",
                **dict(where, trajectory_id=trajectory_id),
            )  # shown with repr()
    return trajectory_id


def unknown_fields(given: Any, known: Any, *, field: str = "", where: dict[str, Any]) -> None:
    """InputError naming the first field of `given` not in `known` (with the nearest known name): a misspelled
    field ("gaol") would otherwise be dropped and the trajectory stored without it."""
    unknown = sorted(k for k in given if k not in known)
    if not unknown:
        return
    guess = difflib.get_close_matches(unknown[0], list(known), n=1)
    hint = f" (did you mean {guess[0]!r}?)" if guess else ""
    raise InputError(
        f"is not a field runbook knows{hint}; the fields are {', '.join(sorted(known))}",
        field=f"{field}{unknown[0]}",
        **where,
    )


def check_nesting(value: Any, *, field: str, where: dict[str, Any]) -> None:
    """InputError when `value` nests deeper than MAX_NESTING (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            raise InputError(
                f"nests more than {MAX_NESTING} levels deep (objects and lists inside each other): flatten it",
                field=field,
                **where,
            )
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def trajectory_from_dict(
    obj: Any,
    *,
    path: str | None = None,
    line: int | None = None,
    base_dir: str | None = None,
    screenshot_root: str | None = None,
    check_screenshots: bool = True,
    check_times: bool = True,
    lenient: bool = False,
) -> Trajectory:
    """Validate one trajectory object of the project / LongMemEval-V2 `states` schema.

    `base_dir` (default: the working folder) resolves relative screenshot paths, and screenshots must lie inside
    it, or inside `screenshot_root` when given (see trajectory/screenshots.py); `check_screenshots=False` only
    joins the paths (for a store's own files); `check_times=False` keeps times as written (a store written before
    times were checked). A field runbook does not know is an error unless `lenient`, which reads as
    LongMemEval-V2's harness loader does (and as the store reads its own files): unknown top-level fields are kept,
    unknown state fields ignored, and a state's position is its index whatever its `state_index` says. Raises
    InputError naming the file, line, trajectory and field.
    """
    base_dir = base_dir or os.getcwd()
    where: dict[str, Any] = {"path": path, "line": line}
    if not isinstance(obj, dict):
        raise InputError(f"a trajectory must be a JSON object, got {type(obj).__name__}", **where)
    tid = _trajectory_id(obj, where)
    where["trajectory_id"] = tid
    _check_top_fields(obj, where, lenient=lenient)
    raw_states = obj.get("states")
    if not isinstance(raw_states, list) or not raw_states:
        _refuse_states(raw_states, where)
    states = [
        _state_from_dict(
            raw,
            pos,
            where=where,
            base_dir=base_dir,
            screenshot_root=screenshot_root,
            check_screenshots=check_screenshots,
            check_times=check_times,
            lenient=lenient,
        )
        for pos, raw in enumerate(raw_states)
    ]
    if check_times:
        check_time_order([s.timestamp for s in states], field="states[{}].timestamp", where=where)
    outcome = obj.get("outcome")
    if isinstance(outcome, bool):
        outcome = "success" if outcome else "failure"
    return Trajectory(
        id=tid,
        states=states,
        goal=_text(obj.get("goal"), where=where, name="goal") or "",
        site=_text(obj.get("site"), where=where, name="site") or "",
        domain=_text(obj.get("domain"), where=where, name="domain") or "web",
        start_url=_text(obj.get("start_url"), where=where, name="start_url") or (states[0].url if states else ""),
        outcome=_text(outcome, where=where, name="outcome"),
        source=_source(obj, where),
        extra={k: v for k, v in obj.items() if k not in _TOP_KNOWN},
    )


def _check_top_fields(obj: dict, where: dict[str, Any], *, lenient: bool) -> None:
    """InputError for a top-level field runbook does not know (unless `lenient`), or a free-form value (source,
    the kept extras) nested past MAX_NESTING."""
    if not lenient:
        unknown_fields(obj, _TOP_KNOWN | KNOWN_EXTRA.keys(), where=where)
    for name in ("source", *KNOWN_EXTRA, *(k for k in obj if k not in _TOP_KNOWN)):
        if name in obj:
            check_nesting(obj[name], field=name, where=where)


def _source(obj: dict, where: dict[str, Any]) -> dict[str, Any] | None:
    source = obj.get("source")
    if source is not None and not isinstance(source, dict):
        raise InputError(f"must be an object, got {type(source).__name__}", field="source", **where)
    return source


def _state_from_dict(
    raw: Any,
    pos: int,
    *,
    where: dict[str, Any],
    base_dir: str,
    screenshot_root: str | None,
    check_screenshots: bool,
    check_times: bool,
    lenient: bool,
) -> State:
    """The state at position `pos` of a trajectory object (trajectory_from_dict's arguments)."""
    fname = f"states[{pos}]"
    if not isinstance(raw, dict):
        raise InputError(f"must be an object, got {type(raw).__name__}", field=fname, **where)
    if not lenient:
        unknown_fields(raw, STATE_KNOWN, field=f"{fname}.", where=where)
    # `step` is the recorder's own numbering (LongMemEval-V2's may start at 1): only `state_index` is a position
    idx = _position(raw.get("state_index", pos), pos, lenient=lenient, where=where, name=f"{fname}.state_index")
    text = raw.get("accessibility_tree", raw.get("text", raw.get("page_text")))
    thought = raw.get("thought", raw.get("thoughts"))
    if isinstance(thought, list):
        thought = "\n".join(str(t) for t in thought)
    shot = _text(raw.get("screenshot"), where=where, name=f"{fname}.screenshot")
    if shot in ("", "None", "null") or (shot is not None and names_no_screenshot(shot)):
        shot = None
    if shot is not None and check_screenshots:
        # as LongMemEval-V2's loader does: a path relative to the data root, or to its screenshots/ folder
        shot = locate(
            shot,
            base_dir,
            screenshot_root=screenshot_root,
            field=f"{fname}.screenshot",
            where=where,
            also_under=("screenshots",),
        )
    elif shot is not None:
        shot = os.path.join(base_dir, shot)
    return State(
        index=idx,
        url=_text(raw.get("url"), where=where, name=f"{fname}.url") or "",
        title=_text(raw.get("title"), where=where, name=f"{fname}.title") or "",
        text=_text(text, where=where, name=f"{fname}.accessibility_tree") or "",
        action=_text(raw.get("action"), where=where, name=f"{fname}.action"),
        action_error=_text(raw.get("action_error"), where=where, name=f"{fname}.action_error") or "",
        thought=_text(thought, where=where, name=f"{fname}.thought"),
        timestamp=check_timestamp(raw.get("timestamp"), field=f"{fname}.timestamp", where=where)
        if check_times
        else _text(raw.get("timestamp"), where=where, name=f"{fname}.timestamp"),
        screenshot=shot,
    )


def _trajectory_id(obj: dict, where: dict[str, Any]) -> str:
    tid = obj.get("id", obj.get("trajectory_id"))
    if tid is None or (isinstance(tid, str) and not tid.strip()):
        raise InputError("is missing or empty", field="id", **where)
    text_id = _text(tid, where=where, name="id")
    assert text_id is not None  # tid is not None: checked above
    return check_id(text_id, **where)


def _refuse_states(raw_states: Any, where: dict[str, Any]) -> NoReturn:
    """The InputError for a `states` field that is not a list of at least one state."""
    if raw_states is None:
        raise InputError("is missing", field="states", **where)
    if not isinstance(raw_states, list):
        raise InputError(f"must be a list, got {type(raw_states).__name__}", field="states", **where)
    raise InputError("is empty: a trajectory needs at least one state", field="states", **where)
