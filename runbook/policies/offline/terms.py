"""The search patterns the offline planner derives from a question: exact phrases and stemmed key terms."""

from __future__ import annotations

import re

from ...core.patterns import LONG_WORD, pattern_stem
from ...core.question import STOP_WORDS, QuestionAnalysis, quoted_labels

MAX_PATTERNS = 24
"""Patterns searched at most: each one costs the single ripgrep pass a little."""
ACTION_SYNONYMS = (
    ("change", "update", "edit", "modify"),
    ("create", "add"),
    ("delete", "remove"),
    ("send", "submit"),
    ("stop", "pause"),
    ("restart", "resume"),
    ("enable", "activate"),
    ("disable", "deactivate"),
)
"""Actions that goals and pages name with different verbs: a question's verb also finds its group's others."""
THING_SYNONYMS = (
    ("folder", "directory"),
    ("repository", "repo"),
    ("ticket", "issue"),
    ("reply", "comment"),
    ("basket", "cart"),
    ("purchase", "order"),
    ("shop", "store"),
    ("client", "customer"),
    ("cost", "price"),
    ("rating", "review"),
    ("bill", "invoice"),
    ("delivery", "shipment", "shipping"),
    ("coupon", "discount", "voucher"),
    ("alert", "notification"),
    ("hotkey", "shortcut"),
    ("tag", "label"),
    ("collaborator", "member"),
    ("photo", "image", "picture"),
    ("preference", "setting"),
    ("route", "direction"),
    ("phone", "telephone"),
    ("postcode", "zip"),
    ("typeface", "font"),
)
"""Things a user names with an everyday word and a site with its own: the user's word (first) also finds the
site's, one way only ('folder' finds 'directory'; a question that says 'issue' is not widened to every 'ticket')."""
SYNONYM_WEIGHT = 0.5
PAIR_WEIGHT = 0.25
"""Word pairs weigh a quarter of a phrase: they help rank, and their absence says nothing."""
WEAK_TERMS = frozenset(
    """many much first look want need find found see seen open opened check button click
clicked page pages site agent task tasks value values kind number""".split()
)
"""Words a question about web pages says without naming anything: kept, at half weight."""


COMMON_SHARE = 0.35
"""A word on more than this share of the stored states is left out of the scan: its ripgrep matches are most of the
scan's time (measured: 'account' and 'product' made a 2.4 s pass of 0.6 s on the 928-trajectory store) and its
weight in the ranking is small."""
MIN_TERMS = 2
"""Words the scan keeps whatever their share (the rarest ones), so that a question of common words still ranks."""
MIN_JOINED_NAME = 4
"""Letters a word joined by hyphens needs to count as a name when each of its parts is a stop word ('to-do'; not
'e.g.')."""


def without_common(patterns: list[dict], shares: dict[str, float]) -> list[dict]:
    """The patterns less the single words on more than COMMON_SHARE of the states (`shares`: from R's index)."""
    terms = [p for p in patterns if p["kind"] == "term" and not p.get("derived")]
    share = {id(p): shares.get(p["label"].lower(), 0.0) for p in terms}
    keep = {id(p) for p in sorted(terms, key=lambda p: share[id(p)])[:MIN_TERMS]}
    return [p for p in patterns if id(p) not in share or id(p) in keep or share[id(p)] <= COMMON_SHARE]


def patterns_for(analysis: QuestionAnalysis) -> list[dict]:
    """[{text, label, kind: phrase|term, stem: suffix|prefix|False, weight, derived}], no two alike, phrases first.

    `text` is what the sandbox searches for (a stem for words), `label` the question's own word."""
    out: list[dict] = []
    seen: set[str] = set()

    quoted = {label.lower() for label in quoted_labels(analysis.question)}

    def add(text: str, kind: str, *, stemmed: bool | str = False, weight: float = 1.0, derived: bool = False) -> None:
        label = text
        if stemmed:
            text = pattern_stem(text)
            stemmed = "prefix" if len(label) >= LONG_WORD else "suffix"
        key = re.sub(r"[\s_-]+", " ", text.lower()).strip()
        if len(key) < 2 or key in seen or (label.lower() in STOP_WORDS and label.lower() not in quoted):
            return
        seen.add(key)
        out.append({"text": text, "label": label, "kind": kind, "stem": stemmed, "weight": weight, "derived": derived})

    for phrase in analysis.phrases:
        if " > " in phrase:
            continue  # the steps of a menu path come as phrases of their own
        phrase = whole_words(phrase, analysis.question)
        words = re.findall(r"[A-Za-z0-9]+", phrase)
        multi = len(words) > 1 or any(c.isdigit() for c in phrase)
        add(phrase, "phrase" if multi else "term", stemmed=not multi and phrase.isalpha())
    for term in analysis.terms:
        parts = [p for p in re.split(r"[-_/.]+", term) if p]
        searched = [p for p in parts if not (p.isdigit() and len(p) < 3) and p not in STOP_WORDS and len(p) >= 2]
        if len(parts) > 1:
            # a name whose every part is a stop word ('In-N-Out', 'to-do') is the question's own word, searched whole
            # (an abbreviation such as 'e.g.' is no name)
            own_name = not searched and sum(map(len, parts)) >= MIN_JOINED_NAME
            add(term, "phrase", derived=not own_name)
        for part in searched:  # '29' of a date is left out: the date itself is a phrase
            weight = 0.5 if part in WEAK_TERMS else 1.0
            add(part, "term", stemmed=part.isalpha(), weight=weight)
    for pattern in list(out):
        for other in synonyms(pattern["label"]):
            add(other, "term", stemmed=True, weight=SYNONYM_WEIGHT, derived=True)
            if out[-1]["label"] == other:
                out[-1].update(synonym=True, synonym_of=pattern["label"])
    for first, second in word_pairs(analysis.question):
        last = pattern_stem(second)
        out_len = len(out)
        add(f"{first} {last}", "phrase", weight=PAIR_WEIGHT, derived=True)
        if len(out) > out_len:
            out[-1].update(label=f"{first} {second}", stem="prefix" if len(second) >= LONG_WORD else "suffix")
    return out[:MAX_PATTERNS]  # the question's own names and words come first; extras are cut


def whole_words(phrase: str, question: str) -> str:
    """The phrase as the question writes it, to the end of its last word ('Ripstop Pan' -> 'Ripstop Pant' when the
    question says "Ripstop Pant's")."""
    at = question.find(phrase)
    if at < 0 or not phrase[-1:].isalnum():
        return phrase
    end = at + len(phrase)
    while end < len(question) and question[end].isalnum():
        end += 1
    return question[at:end]


def synonyms(word: str) -> list[str]:
    """Other words web tasks use for the same action ('change' -> 'update', 'edit', 'modify'), or sites for the
    thing a user names ('folder' -> 'directory')."""
    w = word.lower()

    def same(a: str, b: str) -> bool:
        return a == b or pattern_stem(a) == pattern_stem(b)

    for group in ACTION_SYNONYMS:
        if any(same(w, g) for g in group):
            return [g for g in group if not same(g, w)]
    for user_word, *site_words in THING_SYNONYMS:
        if same(w, user_word):
            return site_words
    return []


def page_words(patterns: list[dict], matched: list[list[str]]) -> list[tuple[str, str]]:
    """(question's word, page's word) for each synonym the best states match (`matched`: the labels each matched)
    where none of them matches the question's own word: the pages name the thing otherwise, which a reader should
    know ('folder' asked, 'directory' written)."""
    seen = {label.lower() for labels in matched for label in labels}
    return [
        (p["synonym_of"], p["label"])
        for p in patterns
        if p.get("synonym_of") and p["label"].lower() in seen and p["synonym_of"].lower() not in seen
    ]


def word_pairs(question: str) -> list[tuple[str, str]]:
    """Two content words side by side in the question ('website URL', 'event annotation'): a page that has them
    side by side likely names the same thing."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9]*(?:'s)?|\S", question)
    pairs = []
    for a, b in zip(words, words[1:]):
        a, b = a.removesuffix("'s"), b.removesuffix("'s")
        if all(
            w.isalnum() and w.lower() not in STOP_WORDS and w.lower() not in WEAK_TERMS and len(w) > 2 for w in (a, b)
        ):
            pairs.append((a.lower(), b.lower()))
    return pairs
