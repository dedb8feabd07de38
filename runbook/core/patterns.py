"""The regex of one search pattern (a phrase, a term, a stem): the same in the scan, the detail and the tests.

A pattern is {"text", "kind": "phrase"|"term", "stem": bool|"prefix", "label", "weight", "derived"}; its words
match in order across spaces, '_' and '-', and a stem takes the suffixes of its word's other forms."""

import re

SUFFIX = r"(?:[a-z]?(?:ed|ing|ings|er|ers)|e|es|s|d|ion|ions|ation|ations|ly|ment|ments|y|ies)?"
"""What a stem may take to be another form of the word: cancel-led, add-ing, categor-ies (not add-ress)."""
_WORD = re.compile(r"[A-Za-z0-9]+")
SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ies", "ied", "ed", "es", "s", "ly")
"""Trimmed from a word so that its pattern matches the word's other forms (canceled -> cancel -> cancels)."""
MIN_STEM = 3
LONG_WORD, PREFIX_LETTERS = 9, 7
"""Words this long are cut to their first letters: truncation is the stemmer that needs no word list."""


def pattern_stem(word: str) -> str:
    """The stem a term's search pattern starts from (its regex then takes SUFFIX, or any letters for a long
    word): a long word's first letters, else one common suffix off and a doubled consonant undone. Not the index's
    term normalisation (runbook.core.text.stem), which folds plurals only.

    'subscription' -> 'subscri' (matches subscribe, subscriber), 'cancelled' -> 'cancel', 'added' -> 'add'.
    """
    w = word.lower()
    if len(w) >= LONG_WORD:
        w = w[:PREFIX_LETTERS]
        return w[:-1] if w[-1] == w[-2] else w
    for suffix in SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= MIN_STEM:
            w = w[: -len(suffix)]
            break
    else:
        return w  # no suffix came off: 'shell' stays 'shell'
    if len(w) > 4 and w[-1] == w[-2] and w[-1] not in "aeious":
        w = w[:-1]
    return w


INVISIBLE_CHARS = "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]"
"""A character a page may hold that shows nothing: a zero-width space or joiner, a direction mark or embedding."""
INVISIBLE_BYTES = r"(?:\xE2\x80[\x8B-\x8F\xAA-\xAE]|\xE2\x81[\xA0-\xA4]|\xEF\xBB\xBF)"
"""The same characters as their UTF-8 bytes, for a pattern ripgrep matches in ASCII mode (its DFA stays fast)."""
_ONE_INVISIBLE = "\0"
"""Where an invisible character may stand, until the pattern knows whether it is ASCII."""
_INVISIBLE = _ONE_INVISIBLE + "*"
_AROUND = r"(?:\s|" + _ONE_INVISIBLE + ")*"
_ASCII_BOUNDARY = r"(?-u:\b)"
ASCII_GROUP = "(?-u:"
"""Opens a group in which ripgrep matches bytes as ASCII (its DFA stays fast); the group ends the pattern."""
"""An ASCII word boundary inside a Unicode regex (ripgrep's syntax; Python's `\b` stands for it in python_regex)."""


def pattern_regex(item: dict) -> str:
    """The ripgrep regex of one pattern: its words in order with flexible separators; a stem takes a suffix. A mark
    the text writes with a space beside it ('Gloss, Ruby Rose', 'Order # 000000160', a title's 'Products / Catalog' or
    'Members · GitLab') may have any space there or none; one written inside a word ('a11yproject.com', "Men's")
    stands as written."""
    text = item["text"]
    found = list(re.finditer(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]", text))
    tokens = [m.group() for m in found]
    body = ""
    for n, (m, tok) in enumerate(zip(found, tokens)):
        if _WORD.fullmatch(tok):
            if n and _WORD.fullmatch(tokens[n - 1]):
                body += r"[\s_-]+"
            body += re.escape(tok)
        elif tok in "-_/":
            body += r"[\s_/-]{0,3}"  # 'Tee-XS-Black', 'Tee XS Black', 'Products / Catalog'
        else:
            spaced_before = m.start() > 0 and text[m.start() - 1].isspace() and not body.endswith(_AROUND)
            spaced_after = m.end() < len(text) and text[m.end()].isspace()
            # a title may carry invisible direction marks beside its marks ('Way: \u202aStanford University\u202c
            # (\u202a29268613\u202c)' on OpenStreetMap): they stand where a space may
            before, after = (_AROUND if spaced_before else _INVISIBLE), (_AROUND if spaced_after else _INVISIBLE)
            body += before + re.escape(tok) + after
    last = tokens[-1] if tokens else ""
    if item.get("stem") == "prefix" and last.isalpha():
        body += "[a-z]*"
    elif item.get("stem") and last.isalpha() and last.lower().endswith("y") and len(last) > MIN_STEM:
        # the index folds 'series', 'movies', 'cities' to 'sery', 'movy', 'city': the question's term comes so, and
        # its pattern takes the forms that end in 'ie' again (it matched no page: 'sery' was 'found in no state')
        body = body[:-1] + "(?:ies?|ied|y" + SUFFIX + ")"
    elif item.get("stem") and last.isalpha():
        body += SUFFIX
    # ASCII mode keeps ripgrep on its DFA: Unicode word boundaries with -i and many patterns cost 100x. A pattern with
    # a non-ASCII character (a page title's '·' or '™') keeps Unicode for its text, but its word boundaries are ASCII
    # ones: one Unicode \b among a question's patterns made a scan 16 times slower (10.0 s against 0.63 s, the same
    # matches). They stand beside an ASCII letter or digit of the pattern, so they differ from Unicode's only where a
    # non-ASCII letter touches the match.
    boundary = r"\b" if body.isascii() else _ASCII_BOUNDARY
    lead = boundary if tokens and _WORD.fullmatch(tokens[0]) else ""
    tail = boundary if last and _WORD.fullmatch(last) else ""
    rx = lead + body + tail
    invisible = INVISIBLE_BYTES if rx.replace(_ONE_INVISIBLE, "").isascii() else INVISIBLE_CHARS
    rx = rx.replace(_ONE_INVISIBLE, invisible)
    # the flag is scoped to the pattern's own group: ripgrep 13 (Debian 12's, the sandbox image's) joins its `-e`
    # patterns with '|' as they are, so a bare '(?-u)' turned Unicode off for every pattern after it, and one with a
    # '·' then failed the whole pass ('Unicode not allowed here'): every pattern was found nowhere
    return ASCII_GROUP + rx + ")" if rx.isascii() else rx


def label(item: dict) -> str:
    return item.get("label") or item["text"]


def python_regex(rx: str) -> re.Pattern:
    if rx.startswith(ASCII_GROUP) and not rx.startswith(_ASCII_BOUNDARY):
        rx = "(?:" + rx[len(ASCII_GROUP) :]
    return re.compile(rx.replace(_ASCII_BOUNDARY, r"\b").replace(INVISIBLE_BYTES, INVISIBLE_CHARS), re.I)
