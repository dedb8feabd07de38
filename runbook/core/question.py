"""Question analysis shared by the methods: what kind of question it is, its key terms and exact phrases.

Deterministic and model-free, so that the offline planner (method C) and retrieval (method R) read a question
the same way:

    >>> a = analyze("What price does the admin currently list for SKU WS05-XS-Black?")
    >>> a.kind, a.wants_latest, a.phrases
    ('dynamic', True, ('WS05-XS-Black', 'SKU WS05-XS-Black'))
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

KINDS = ("static", "dynamic", "procedure", "gotcha")

STOP_WORDS = frozenset(
    """
a about above after again against all am an and any are aren't as at be because been before being below between both
but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from further
had hadn't has hasn't have haven't having he her here hers herself him himself his how i if in into is isn't it it's
its itself just let's me more most my myself no nor not of off on once only or other ought our ours ourselves out
over own same she should shouldn't so some such than that that's the their theirs them themselves then there there's
these they this those through to too under until up very was wasn't we were weren't what what's when where where's
which while who whom why will with won't would wouldn't you your yours yourself yourselves
one ones also via per does shown show shows showing list lists listed displayed display displays use used uses using
get got make made currently current now latest still anymore recently most last time times agent agent's page app
here there thing things way without must might shall
""".split()
)
"""Function words, question words, and words every question about a memory of web pages carries."""
LIST_NOUNS = frozenset({"apps", "pages"})
"""Plurals of stop words that name a list a site shows ('the apps installed': its Apps page), kept as terms."""

_NOT_DONE = re.compile(r"(?i)\b(?:without|rather than|instead of)\s+\w+ing\b")
"""An action the question rules out ('without deleting it'): not a word to search for."""
_LATEST = re.compile(
    r"\b(current(ly)?|now|latest|most recent(ly)?|newest|last (set|saved|changed|updated|value)|"
    r"still|any ?more|at present|as of (now|today)|these days|final(ly)? (value|state))\b",
    re.I,
)
_PROCEDURE = re.compile(
    r"\b(how (do|does|did|can|could|should|would|is|are|was|were|to)\b(?! (many|much|long|often|"
    r"old|far|big|large))|what (are the )?steps|which steps|step[- ]by[- ]step|walk me through|"
    r"in what order|what is the (procedure|process|workflow)|where do (you|i) (go|click|find))",
    re.I,
)
_GOTCHA = re.compile(
    r"\b(went wrong|go wrong|goes wrong|why\b|fail(ed|s|ure)?|error|errors|time[sd]? ?out|"
    r"pitfall|gotcha|mistake|careful|watch out|avoid|check first|problem|trap|workaround|fix\b|"
    r"did not work|didn't work|doesn't work|broken|stuck|retry|retries|in the way|obstacle|blocked|"
    r"prerequisite|what happen(?:s|ed)\b|(?:have|need|must) to do (?:first|before)|must be (?:set|done|checked|chosen) "
    r"(?:first|before))",
    re.I,
)
_TASK = re.compile(
    r"(?:please\s+)?(?:set|change|update|create|add|delete|remove|enable|disable|turn (?:on|off)|assign|cancel|edit|"
    r"rename|invite|post|reply|subscribe|unsubscribe|install|uninstall|revoke|disconnect|connect|reduce|increase|"
    r"apply|mark|archive|fork|star|follow|upload|register|reset|publish|duplicate|move|draft|submit|approve|reject|"
    r"reorder|rate|review|book|schedule|configure|switch|leave|join|open (?:a|an|the|new))\b",
    re.I,
)
"""A task's goal ('Set 'Store Email' to x in Settings.'): an agent asks with it to learn how the task is done."""
_DYNAMIC = re.compile(r"\b(changed?|updated?|set to|now|after the agent|most recently|anymore|still)\b", re.I)

_MONTHS = {m: n for n, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY = re.compile(
    rf"\b(?:(?P<iso>20\d\d-[01]\d-[0-3]\d)|(?P<mon>{_MONTH}) (?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (?P<y>20\d\d))?"
    rf"|(?P<d2>\d{{1,2}}) (?P<mon2>{_MONTH})(?:,? (?P<y2>20\d\d))?)(?![\w-])",
    re.I,
)
_MINUTE = re.compile(r",?(?: at)? ([01]?\d|2[0-3]):([0-5]\d)\b")
_QUOTED = re.compile(r"'([^']{2,160})'(?!\w)|\"([^\"]{2,160})\"|‘([^’]{2,160})’|“([^”]{2,160})”")
_URL = re.compile(r"\bhttps?://[^\s'\"<>)]+|(?<![\w/])/[A-Za-z0-9_.~-]+(?:/[A-Za-z0-9_.~#=-]*)*")
# the digit an id needs is looked for at most ID_DIGIT_REACH characters ahead: an unbounded look-ahead, retried at
# every word boundary of one long token, made a long question cost quadratic time
ID_DIGIT_REACH = 200
_ID = re.compile(
    rf"#?\b(?=[A-Za-z0-9._/:-]{{0,{ID_DIGIT_REACH}}}\d)[A-Za-z0-9][A-Za-z0-9._/:-]*[A-Za-z0-9%]\b%?|\$\d[\d,]*(?:\.\d+)?"
)
_MENU = re.compile(
    r"([A-Z][\w&'.-]*(?: [A-Za-z&][\w&'.-]*){0,3}(?:\s*(?:>|->|→|»)\s*[A-Z][\w&'.-]*"
    r"(?: [A-Za-z&][\w&'.-]*){0,3})+)"
)
_CAPWORD = r"[A-Z](?:[\w&.-]|'(?!s\b))*(?![\w&.-])"
"""A capitalised word, whole: it ends where the word does, so that a possessive ends the name before its 's ("Sarah
Miller's" -> 'Sarah Miller'; the word cut short to end without the 's had given 'Sarah Mille')."""
_NAME = re.compile(rf"{_CAPWORD}(?:(?: (?:of|the|and|for|de|&))? {_CAPWORD})+")
_WORD = re.compile(r"[a-z0-9][a-z0-9'._-]*[a-z0-9%]|[a-z0-9]")

_LEADING_CAPS = frozenset(
    """What Which Who Whom Whose When Where Why How Is Are Was Were Do Does Did Can Could
Should Would Will In On At For From To After Before During Since Until The A An If Once Find Show List Tell Give
Name""".split()
)

_PREMISE_CUES = (
    (
        re.compile(
            r"\bthe (\w+(?: \w+){0,3}) (?:that|which) the agent (created|added|made|wrote|posted|opened|set up)\b", re.I
        ),
        "assumes the agent {2} '{1}' and that it still exists",
    ),
    (
        re.compile(
            r"\b(send|sent|reply|replied|respond|responded|answer|answered) back\b|\bwhat (\w+ )?did (the )?"
            r"(store owner|owner|admin|support|seller|user|customer)s? (send|reply|say|answer)",
            re.I,
        ),
        "assumes a reply was received; check that one was ever observed",
    ),
    (
        re.compile(
            r"\bhow (do|can|does|did) (you|i|one|the agent) "
            r"(add|switch|enable|turn on|attach|insert|merge|combine)\b",
            re.I,
        ),
        "assumes the interface offers this option; check that the control exists",
    ),
)


@dataclass(frozen=True, slots=True)
class QuestionAnalysis:
    """What a question asks for, read without a model."""

    question: str
    kind: str
    """'static' (a fact on a page), 'dynamic' (a value that changes: latest wins), 'procedure' (how to do it),
    'gotcha' (errors, pitfalls, why something failed)."""
    terms: tuple[str, ...]
    """Key terms in question order: lower-case, stop and question words removed, possessives and plurals trimmed."""
    phrases: tuple[str, ...]
    """Exact strings worth grepping for: quoted text, Capitalised names, ids/SKUs/numbers, URLs/paths, menu paths."""
    wants_latest: bool
    """The question asks for the current / latest / most recent value."""
    possible_false_premise: tuple[str, ...] = field(default=())
    """Presuppositions to verify (the named thing exists, the option exists, a reply came): hints, not verdicts."""
    menu_paths: tuple[tuple[str, ...], ...] = field(default=())
    """'Sales > Orders' as ('Sales', 'Orders'): navigation the question names."""
    moments: tuple[tuple[str, str], ...] = field(default=())
    """The days (and minutes) the question names, as (day, minute): ('2025-12-16', '19:39') for 'on 2025-12-16 at
    19:39 UTC', ('--12-18', '') for 'on Dec 18' (no year given); times are UTC, as stored."""

    @classmethod
    def from_dict(cls, obj: dict) -> QuestionAnalysis:
        """The analysis sent as JSON (dataclasses.asdict), e.g. to the sandbox's planner program."""
        return cls(
            question=obj["question"],
            kind=obj["kind"],
            terms=tuple(obj.get("terms") or ()),
            phrases=tuple(obj.get("phrases") or ()),
            wants_latest=bool(obj.get("wants_latest")),
            possible_false_premise=tuple(obj.get("possible_false_premise") or ()),
            menu_paths=tuple(tuple(p) for p in obj.get("menu_paths") or ()),
            moments=tuple((str(d), str(m)) for d, m in obj.get("moments") or ()),
        )

    def confirmed(self, present: Callable[[str], bool]) -> QuestionAnalysis:
        """This analysis without the hints that a quoted label exists for the labels `present` finds (a context or a
        scan that shows the label answers that doubt; leaving it would tell the reader the premise may be false)."""
        kept = tuple(
            hint
            for hint, label in zip(self.possible_false_premise, _hint_labels(self.possible_false_premise))
            if label is None or not present(label)
        )
        return self if kept == self.possible_false_premise else replace(self, possible_false_premise=kept)

    @property
    def wants_newest(self) -> bool:
        """Whether the newest view of a page answers: the question asks for a current value ('now', 'currently'),
        or about a value that changes without naming when; one that names a day or minute asks for that moment."""
        return self.wants_latest or (self.kind == "dynamic" and not self.moments)

    def summary(self) -> str:
        """One line for a Context's analysis."""
        parts = [f"question kind: {self.kind}"]
        if self.wants_latest:
            parts.append("wants the latest value (newer evidence first; older values labelled)")
        if self.phrases:
            parts.append("key phrases: " + ", ".join(repr(p) for p in self.phrases[:8]))
        if self.possible_false_premise:
            parts.append("check the premise: " + "; ".join(self.possible_false_premise))
        return ". ".join(parts) + "."


def is_name(phrase: str) -> bool:
    """A phrase that names one thing: several words, or a number or id in it (a lone capitalised word such as an
    acronym is often written out in full on the page)."""
    return len(phrase.split()) > 1 or any(ch.isdigit() for ch in phrase)


def analyze(question: str) -> QuestionAnalysis:
    """Read `question` into a QuestionAnalysis (deterministic, no model)."""
    text = " ".join(question.split())
    wants_latest = bool(_LATEST.search(text))
    menus = _menu_paths(text)
    phrases = _phrases(text, menus)
    return QuestionAnalysis(
        question=question,
        kind=_kind(text, wants_latest),
        terms=tuple(_terms(_NOT_DONE.sub(" ", text))),
        phrases=tuple(phrases),
        wants_latest=wants_latest,
        possible_false_premise=tuple(_premise_hints(text, phrases)),
        menu_paths=tuple(menus),
        moments=tuple(moments_in(text)),
    )


def moments_in(text: str) -> list[tuple[str, str]]:
    """The days a text names, each with the minute it gives right after it ('on 2025-12-16 at 19:39 UTC', 'Dec 18',
    'December 18, 2025', '18 Dec'): (day as 'YYYY-MM-DD', or '--MM-DD' without a year; 'HH:MM' or '')."""
    out: list[tuple[str, str]] = []
    for m in _DAY.finditer(text):
        if m.group("iso"):
            day = m.group("iso")
        else:
            month = _MONTHS[(m.group("mon") or m.group("mon2"))[:3].lower()]
            number = int(m.group("d") or m.group("d2"))
            if not 1 <= number <= 31:
                continue
            year = m.group("y") or m.group("y2")
            day = f"{year or '-'}-{month:02d}-{number:02d}" if year else f"--{month:02d}-{number:02d}"
        after = _MINUTE.match(text, m.end())
        minute = f"{int(after.group(1)):02d}:{after.group(2)}" if after else ""
        if (day, minute) not in out:
            out.append((day, minute))
    return out


def _kind(text: str, wants_latest: bool) -> str:
    if _GOTCHA.search(text):
        return "gotcha"
    if _PROCEDURE.search(text) or _TASK.match(text):
        return "procedure"
    if wants_latest or _DYNAMIC.search(text):
        return "dynamic"
    return "static"


def normalize_term(word: str) -> str:
    """Light normalisation: lower-case, no possessive, simple plural trimmed ('categories' -> 'category')."""
    w = word.lower().strip("'._-")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 3 and not any(c.isdigit() for c in w):
        if w.endswith("ies"):
            w = w[:-3] + "y"
        elif w.endswith(("sses", "shes", "ches", "xes")):
            w = w[:-2]
        elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    return w


def _terms(text: str) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()  # a set beside the list: a long question must cost linear time, not quadratic
    for raw in _WORD.findall(text.lower()):
        if raw in STOP_WORDS:
            continue
        term = raw if raw in LIST_NOUNS else normalize_term(raw)
        if term and term not in STOP_WORDS and term not in seen and len(term) > 1:
            seen.add(term)
            out.append(term)
    return out


def _menu_paths(text: str) -> list[tuple[str, ...]]:
    paths = []
    for match in _MENU.finditer(text):
        steps = [s.strip(" '\"") for s in re.split(r"\s*(?:>|->|→|»)\s*", match.group(1))]
        steps[0] = _strip_leading_lower(_strip_leading_caps(steps[0]))
        steps = [_trim_tail(s) for s in steps]
        if all(steps):
            paths.append(tuple(steps))
    return paths


def _strip_leading_caps(step: str) -> str:
    words = step.split()
    while len(words) > 1 and (words[0] in _LEADING_CAPS or words[0].lower() in STOP_WORDS):
        words.pop(0)
    return " ".join(words)


def _strip_leading_lower(step: str) -> str:
    """'searching the Sales' -> 'Sales': a menu's first step starts at its first Capitalised word (the words before
    it are the sentence's: "Before searching the Sales > Orders grid")."""
    words = step.split()
    while len(words) > 1 and not words[0][:1].isupper():
        words.pop(0)
    return " ".join(words)


def _trim_tail(step: str) -> str:
    """'All Customers grid contain' -> 'All Customers': a menu step ends at its last Capitalised word."""
    words = step.split()
    while len(words) > 1 and not words[-1][:1].isupper():
        words.pop()
    return " ".join(words)


def _phrases(text: str, menus: list[tuple[str, ...]]) -> list[str]:
    found: list[str] = []
    seen: set[str] = set()  # the lower-cased phrases found: each new one is checked in constant time

    def add(phrase: str) -> None:
        phrase = phrase.strip(" .,;:?!'\"")
        if len(phrase) >= 2 and phrase.lower() not in seen:
            seen.add(phrase.lower())
            found.append(phrase)

    for match in _QUOTED.finditer(text):
        add(next(g for g in match.groups() if g))
    for match in _URL.finditer(text):
        add(match.group(0))
    for match in _ID.finditer(text):
        token = match.group(0)
        if not re.fullmatch(r"\d", token) and not _URL.fullmatch(token):
            add(token.lstrip("#") if token.startswith("#") and len(token) > 3 else token)
    for steps in menus:
        add(" > ".join(steps))
        for step in steps:
            add(step)
    unquoted = _QUOTED.sub(" , ", text)
    for match in _NAME.finditer(unquoted):
        name = _strip_leading_caps(match.group(0))
        if " " in name or (name != match.group(0) and name[:1].isupper() and len(name) > 2):
            add(name)
    inside = {w.lower() for p in found for w in re.findall(r"\w+", p)}
    for match in re.finditer(r"(?<![\w'.-])([A-Z]\w*)(?:'s)?(?![\w'-])", unquoted):
        word = match.group(1)
        if (
            match.start() > 0
            and word not in _LEADING_CAPS
            and word.lower() not in inside
            and (len(word) > 2 or word.isupper())
        ):
            add(word)  # a Capitalised word mid-sentence names something: Karaoke, GitLab, OSM, Super_Awesome_Robot
    quoted = {label.lower() for label in quoted_labels(text)}
    # a quoted label is the page's own words ('From', 'All', 'Status'): kept even when it reads like a question word
    return [p for p in found if p not in _LEADING_CAPS or p.lower() in quoted]


def quoted_labels(text: str) -> list[str]:
    """The labels a question quotes ('Yours', "Pending"): the page's own words, kept even when they are stop words."""
    return [next(g for g in m.groups() if g).strip() for m in _QUOTED.finditer(text)]


_LABEL_HINT = re.compile(r"^assumes '(.*)' exists; confirm it appears in a state$")


def names_label(text: str, label: str) -> bool:
    """Whether `text` shows `label` as words of its own, case aside ('relations' is not in 'relationship_advice')."""
    return re.search(rf"(?<![\w]){re.escape(label)}(?![\w])", text, re.I) is not None


def _hint_labels(hints: tuple[str, ...]) -> list[str | None]:
    """The quoted label each hint doubts (None for a hint of another kind)."""
    return [m.group(1) if (m := _LABEL_HINT.match(hint)) else None for hint in hints]


_AGENT_DID = re.compile(
    r"\b(?:the agent|it|they)\s+(?:had\s+|has\s+)?(renamed|created|added|deleted|removed|changed|gave|posted|wrote|"
    r"edited|updated|moved|archived|forked|uploaded|published|duplicated|enabled|disabled|revoked|cancell?ed|replied|"
    r"sent|ordered|bought|reviewed|rated|subscribed|joined|picked|chose|assigned|invited)\b"
    r"|(?<!how )(?<!why )\bdid (?:the agent|it|they) (rename|create|add|delete|remove|change|give|post|write|edit|"
    r"update|move|archive|fork|upload|publish|duplicate|enable|disable|revoke|cancel|reply|send|order|buy|review|"
    r"rate|subscribe|join|pick|choose|assign|invite)\b",
    re.I,
)
"""A step the question takes for granted ('the name the agent gave X when it renamed it'): a question can only ask
about it if the step was taken, so the context should show the step, not only the thing."""

_PAST = {"give": "gave", "write": "wrote", "send": "sent", "buy": "bought", "choose": "chose", "pick": "picked",
         "add": "added", "post": "posted", "edit": "edited", "fork": "forked", "cancel": "cancelled",
         "reply": "replied", "order": "ordered", "join": "joined", "assign": "assigned"}  # fmt: skip
"""The past of the verbs `_AGENT_DID` finds after 'did' that do not take a plain -d."""


def _premise_hints(text: str, phrases: list[str]) -> list[str]:
    hints = []
    for pattern, template in _PREMISE_CUES:
        match = pattern.search(text)
        if match:
            groups = ["" if g is None else g for g in match.groups()]
            hints.append(template.format(match.group(0), *groups))
    did = _AGENT_DID.search(text)
    if did and not any(h.startswith("assumes the agent ") for h in hints):
        # the clause as the question says it, up to its end ('the agent posted its relationship questions')
        rest = re.split(r"[,.;?!]| (?:and|but|because|when|while|so) ", text[did.end() :], maxsplit=1)[0].split()
        verb = (did.group(1) or _PAST.get(did.group(2).lower(), did.group(2) + "d")).lower()
        clause = " ".join(["the agent", verb, *rest[:8]])
        hints.append(f"assumes that {clause} (a step the question takes for granted); check that a state shows it")
    for name in quoted_labels(text)[:3]:
        hints.append(f"assumes '{name}' exists; confirm it appears in a state")
    return hints
