"""The offline planner's programs for the sandbox: `scan` ranks states for a question, `detail` reads chosen states.

This module runs INSIDE the sandbox through the `python` tool (stdlib, `rbk`, and Pillow when the image has it;
nothing from `runbook`); the planner sends `import rbscan; rbscan.scan({...})` or `rbscan.detail({...})`; each prints
JSON lines, most important first and within a character budget, so the output parses line by line:

    scan    {"type": "terms", "df": {pattern: [states, trajectories]}, "missing": [...], "sites": [...]}
            {"type": "image", "t": id, "i": index, "d": hash bits apart, "px": grey difference}   (with an image)
            {"type": "latest", "t": id, "i": index, "s": score, "time": ...}     (newest first; 'current' questions)
            {"type": "state", "t": id, "i": index, "s": score, "time": ..., "ok": run succeeded, "err": 0|1, ...}
            {"type": "extra", ...}   a state covering what the best states leave out
            {"type": "traj", "t": id, "s": score, "gs": goal score, "head": 0-2, "ok": ..., "n": states,
             "ne": states with errors, "goal": ...}
    detail  {"type": "step", "t": id, "i": index, "time": ..., "act": action with what it clicked, "err": ...,
             "lines": [page lines with the question's terms, each with the text after it]}

Scoring: BM25 over single states (one ripgrep pass with every pattern, its `-o` output tallied per state), plus
the trajectory's goal, the state's url and title, a bonus for exact phrases and for states showing all the names
the question gives, and a boost for the site the question names. A question's own words are weighed by rarity.
"""
import json
import math
import os
import re
import sqlite3
import subprocess
from collections import Counter, defaultdict

try:
    import rbk
except ImportError:  # imported on the host for image_hash only; rbk lives in the sandbox
    rbk = None

K1, B = 1.2, 0.75
GOAL_WEIGHT = 0.8
"""A question term in the trajectory's goal counts this much of a saturated page term: the goal says what the run was for."""
HEAD_WEIGHT = 1.0
"""A term in the state's url or title counts this much extra: it names the page."""
ANSWER_BOOST = 0.25
"""A state where the agent reported its answer (send_msg_to_user, done) scores this much more for fact questions."""
_ANSWER = re.compile(r"\s*(?:send_msg_to_user|done|answer|stop|report_infeasible)\(")
ANCHOR_BOOST = 1.0
"""A state showing every name the question gives (quoted labels, Capitalised names, ids) scores this much more."""
PHRASE_BONUS = 1.0
"""Phrases (names, ids, quoted labels) weigh this much more than single words."""
SITE_BOOST = 0.6
"""States of the site the question names score this much more (x1.6)."""
LINE_WIDTH = 200
FILLERS = frozenset("a an the my our your all this that these those some any new to of for in on with".split())
"""Words skipped when reading a goal's first words."""
QUOTE_WIDTH = 480
ERROR_WIDTH = 300
FURNITURE_PAGES, FURNITURE_SHARE = 3, 0.5
"""A line on at least 3 of the pages read together, and on half of them, is a menu or a header."""
_IDS = re.compile(r"\[\d+\]")
WEAK_LINE = 0.5
"""A line carrying less than this share of the best line's weight is not worth quoting."""
_VALUE_ATTR = re.compile(r"\b(?:value|checked|selected|aria-checked|aria-selected)=(?:'[^']*'|\"[^\"]*\"|\S+)")
_TAG_NAME = re.compile(r"<(\w+)")
_ESCAPED = re.compile(r"\\u[0-9a-fA-F]{4}|[\ue000-\uf8ff]")
"""Icon glyphs, escaped ('\\ue605') or not: private-use characters that say nothing."""
_AX_NAME = re.compile(r"^(?:\[\d+\]\s*)?[A-Za-z]+ '(.*?)'(?:,|$)")
_TAG_ID = re.compile(r"\bid=[\w-]+")
_BARE = re.compile(r"(?:\*?\[\d+\]\s*)?<[^>]*>|(?:\[\d+\]\s*)?\w+ ''(?:, \w+=\S+)*|\|[A-Z]+\([a-z]+\)\|.*")
"""A page line that carries no text of its own: a DOM tag, an unnamed accessibility node."""
SUFFIX = r"(?:[a-z]?(?:ed|ing|ings|er|ers)|e|es|s|d|ion|ions|ation|ations|ly|ment|ments|y|ies)?"
"""What a stem may take to be another form of the word: cancel-led, add-ing, categor-ies (not add-ress)."""
HASH_SIZE = 16
THUMB = (64, 40)
TIE_BITS, TIE_POOL = 4, 16
"""Screenshots within this many bits of the closest hash (at most this many) are told apart by their thumbnails."""
_WORD = re.compile(r"[A-Za-z0-9]+")
_TARGET = re.compile(r"""(?:\(\s*['"]?|index=)(\d+)""")


# -- patterns --------------------------------------------------------------------------------------------------
def pattern_regex(item):
    """The ripgrep regex of one pattern: its words in order with flexible separators; a stem takes a suffix."""
    tokens = re.findall(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]", item["text"])
    body = ""
    for n, tok in enumerate(tokens):
        if _WORD.fullmatch(tok):
            if n and _WORD.fullmatch(tokens[n - 1]):
                body += r"[\s_-]+"
            body += re.escape(tok)
        elif tok in "-_/":
            body += r"[\s_/-]?"
        else:
            body += re.escape(tok)
    last = tokens[-1] if tokens else ""
    if item.get("stem") == "prefix" and last.isalpha():
        body += "[a-z]*"
    elif item.get("stem") and last.isalpha():
        body += SUFFIX
    lead = r"\b" if tokens and _WORD.fullmatch(tokens[0]) else ""
    tail = r"\b" if last and _WORD.fullmatch(last) else ""
    rx = lead + body + tail
    # ASCII mode keeps ripgrep on its DFA: Unicode word boundaries with -i and many patterns cost 100x
    return "(?-u)" + rx if rx.isascii() else rx


def label(item):
    return item.get("label") or item["text"]


def python_regex(rx):
    return re.compile(rx.replace("(?-u)", "", 1), re.I)


# -- the catalog -----------------------------------------------------------------------------------------------
def connect(root):
    """The catalog, read-only (immutable when the store's mount cannot hold SQLite's lock files)."""
    path = os.path.join(root, "catalog.sqlite")
    last = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"file:{path}?{query}", uri=True)
            conn.execute("SELECT count(*) FROM trajectories").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            last = exc
    raise SystemExit(f"cannot read {path}: {last}")


def load_catalog(root):
    """(rows by dir, dir by id, state meta by (dir, index)) from catalog.sqlite."""
    conn = connect(root)
    try:
        rows, by_id = {}, {}
        for tid, d, site, goal, outcome, success, n, first in conn.execute(
                "SELECT id, dir, site, goal, outcome, success, n_states, first_ts FROM trajectories"):
            rows[d] = {"id": tid, "dir": d, "site": site or "", "goal": goal or "", "outcome": outcome or "",
                       "success": success, "n": n, "first": first or ""}
            by_id[tid] = d
        meta = {}
        for tid, i, url, title, ts, action, error, tokens, shot in conn.execute(
                "SELECT trajectory_id, state_index, url, title, timestamp, action, action_error, tokens, screenshot "
                "FROM states"):
            d = by_id.get(tid)
            if d is not None:
                meta[(d, i)] = (ts or "", url or "", title or "", action or "", error or "", tokens or 1, shot or "")
    finally:
        conn.close()
    return rows, by_id, meta


# -- the ripgrep pass ------------------------------------------------------------------------------------------
def run_rg(root, regexes):
    """{(dir, index): Counter(matched text, lower-cased)} for every state file matching any regex, tried in order:
    at one position the first pattern that matches wins, so longer phrases must come first."""
    args = [rbk.ripgrep_binary(), "--no-config", "--no-ignore", "-o", "-i", "--null", "--no-line-number",
            "--no-heading", "-g", "**/states/*.md"]
    for rx in regexes:
        args += ["-e", rx]
    out = subprocess.run(args + ["--", "trajectories"], cwd=root, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout
    found = defaultdict(Counter)
    for line, n in Counter(out.split(b"\n")).items():
        path, sep, match = line.partition(b"\0")
        if not sep:
            continue
        parts = path.decode("utf-8", "replace").split("/")
        if len(parts) != 4 or not parts[3][:-3].isdigit():
            continue
        found[(parts[1], int(parts[3][:-3]))][match.decode("utf-8", "replace").lower()] += n
    return found


def assign(found, compiled):
    """{(dir, index): Counter(pattern index: tf)}: each matched text credited to every pattern found in it (a
    phrase's words count too)."""
    owners_of, tfs = {}, {}
    for key, matches in found.items():
        tf = Counter()
        for text, n in matches.items():
            owners = owners_of.get(text)
            if owners is None:
                owners = owners_of[text] = [k for k, rx in enumerate(compiled) if rx.search(text)]
            for k in owners:
                tf[k] += n
        if tf:
            tfs[key] = tf
    return tfs


# -- scoring ---------------------------------------------------------------------------------------------------
def site_matches(rows, compiled, site_terms):
    """Sites whose name the question uses ('GitLab', 'admin', 'theme editor'): {site: share of its name's words
    the question has}; only the best share counts, so 'accounts' does not pull in 'linear-account-settings'
    when 'admin' names 'shopping_admin' better."""
    sites = {r["site"] for r in rows.values() if r["site"]}
    shares = {}
    for site in sites:
        words = [w for w in re.split(r"[-_\s]+", site) if w]
        n = sum(1 for w in words if any(compiled[k].fullmatch(w) for k in site_terms))
        if n:
            shares[site] = n / len(words)
    top = max(shares.values(), default=0)
    return {s: share for s, share in shares.items() if share == top}


def weights_of(items, df, n_states):
    return [math.log(1 + (n_states - df[k] + 0.5) / (df[k] + 0.5)) * float(items[k].get("weight", 1.0))
            * (1 + PHRASE_BONUS * (items[k].get("kind") == "phrase")) for k in range(len(items))]


def score_states(tfs, meta, rows, compiled, idf, sites, items, answers=False, anchors=()):
    """{(dir, index): (score, coverage with the goal, matched pattern indices, share of the question's own words
    on the page alone)}.

    Every term is weighed by its rarity among all states (BM25's idf, times the pattern's own weight).
    """
    total_weight = sum(idf) or 1.0
    own = {k for k, it in enumerate(items) if not it.get("derived")}
    own_weight = sum(idf[k] for k in own) or 1.0
    goal_hits = {d: [k for k, rx in enumerate(compiled) if rx.search(r["goal"])] for d, r in rows.items()}
    avg_len = sum(m[5] for m in meta.values()) / max(1, len(meta))
    scores = {}
    for key, tf in tfs.items():
        m = meta.get(key)
        if m is None:
            continue
        site = rows[key[0]]["site"]
        norm = K1 * (1 - B + B * m[5] / avg_len)
        s = sum(idf[k] * tf[k] * (K1 + 1) / (tf[k] + norm) for k in tf)
        head = f"{m[1]} {m[2]}"
        s += HEAD_WEIGHT * sum(idf[k] for k in tf if compiled[k].search(head))
        goal = goal_hits.get(key[0], ())
        s += GOAL_WEIGHT * sum(idf[k] for k in goal)
        if sites and site in sites:
            s *= 1 + SITE_BOOST
        if answers and _ANSWER.match(m[3]):
            s *= 1 + ANSWER_BOOST
        if anchors and all(k in tf for k in anchors):
            s *= 1 + ANCHOR_BOOST
        covered = set(tf) | set(goal)
        scores[key] = (s, sum(idf[k] for k in covered) / total_weight, sorted(tf),
                       sum(idf[k] for k in tf if k in own) / own_weight)
    return scores


TROUBLE = (r"(?-u)\b(?:errors?|fail(?:s|ed|ure)?|time[sd]? ?out|timeout|not found|no (?:records|results|matches)|"
           r"could ?n[o']t|cannot|can't|unable|instead|retry|again|did ?n[o']t|wrong|incorrect|intercepts?|"
           r"blocked|unexpected|mismatch)\b")
"""Words with which pages, errors and the agent's thoughts say that something went wrong."""


def scan(params):
    """Rank every state for the question's patterns and print the best, as JSON lines."""
    root = rbk.default_store_dir()
    items = params["patterns"]
    regexes = [pattern_regex(item) for item in items]
    compiled = [python_regex(rx) for rx in regexes]
    trouble = len(items) if params.get("prefer") == "trouble" else None
    rows, by_id, meta = load_catalog(root)
    longest_first = [regexes[k] for k in sorted(range(len(items)), key=lambda k: -len(items[k]["text"]))]
    tfs = assign(run_rg(root, longest_first + ([TROUBLE] if trouble is not None else [])),
                 compiled + ([python_regex(TROUBLE)] if trouble is not None else []))
    troubles = {key: tf.pop(trouble, 0) for key, tf in tfs.items()} if trouble is not None else {}
    tfs = {key: tf for key, tf in tfs.items() if tf}
    n_states = max(1, len(meta))
    df = Counter(k for tf in tfs.values() for k in tf)
    per_trajectory = defaultdict(set)
    for (d, _), tf in tfs.items():
        per_trajectory[d].update(tf)
    tdf = Counter(k for ks in per_trajectory.values() for k in ks)
    idf = weights_of(items, df, n_states)
    sites = site_matches(rows, compiled, [k for k, it in enumerate(items) if it.get("kind") == "term"])
    out = Printer(params.get("max_chars", 6000))
    out.add({"type": "terms", "n_states": n_states, "n_trajectories": len(rows), "sites": sorted(sites),
             "df": {label(items[k]): [df[k], tdf[k]] for k in range(len(items))},
             "missing": [label(items[k]) for k in range(len(items)) if not df[k]]})

    if params.get("image"):
        looks = nearest_screenshots(root, rows, meta, params["image"], params.get("image_top", 3))
        for rec in looks:
            out.add(rec)
        if looks and looks[0].get("t") and not sites:  # the pictured app is the one asked about
            sites = {rows[by_id[looks[0]["t"]]]["site"]: 1.0}
    anchors = anchor_patterns(items, compiled, df, rows)
    scores = score_states(tfs, meta, rows, compiled, idf, sites, items, params.get("answers", False), anchors)
    if trouble is not None:
        prefer_trouble(scores, meta, rows, troubles)
    # ripgrep's file order varies from run to run: the state itself breaks ties, so the plan is deterministic
    ranked = sorted(scores, key=lambda key: (-scores[key][0], meta[key][0], key))
    if ranked:  # where the question's names show last: the current value, whatever the question's kind
        newest = newest_with(anchors, tfs, rows, meta, sites) if anchors else []
        if not newest and params.get("latest"):
            newest = newest_strong(ranked, scores, meta, params)
        for key in newest[:params.get("latest_top", 6) if params.get("latest") else 2]:
            rec = state_record(key, scores[key], meta, rows, items, False)
            rec["type"] = "latest"
            out.add(rec)
    for key in complements(ranked, scores, idf, params.get("complements", 3)):
        rec = state_record(key, scores[key], meta, rows, items, True)
        rec["type"] = "extra"
        out.add(rec)
    runs = run_records(ranked, scores, rows, meta, compiled, items, params.get("trajectories", 8))
    top = params.get("top", 30)
    runs_after = min(top, len(ranked), params.get("states_before_trajectories", 15))
    for n, key in enumerate(ranked[:top]):
        if n == runs_after:
            for rec in runs:
                out.add(rec)
            runs = []
        rec = state_record(key, scores[key], meta, rows, items, n < params.get("full", 3))
        if troubles:
            rec["tr"] = troubles.get(key, 0)
        out.add(rec)
    for rec in runs:
        out.add(rec)
    out.flush()


def prefer_trouble(scores, meta, rows, troubles):
    """Gotcha questions: states whose action failed, in failed runs, with words of trouble, score higher."""
    for key, (s, cov, matched, page_cov) in list(scores.items()):
        boost = 1 + 0.5 * bool(meta[key][4].strip()) + 0.4 * (rows[key[0]]["success"] == 0)
        boost += 0.3 * min(troubles.get(key, 0), 3) / 3
        scores[key] = (s * boost, cov, matched, page_cov)


def complements(ranked, scores, idf, limit, top=3, pool=300):
    """States that best cover what the best states leave out (a question may ask about two things at once)."""
    covered = set().union(*(scores[key][2] for key in ranked[:top])) if ranked else set()
    out = []
    for _ in range(limit):
        gain = {key: sum(idf[k] for k in scores[key][2] if k not in covered) for key in ranked[top:pool]
                if key not in out}
        best = max(gain, key=lambda key: (gain[key], scores[key][0]), default=None)
        if best is None or gain[best] <= 0.2 * sum(idf):
            break
        out.append(best)
        covered |= set(scores[best][2])
    return out


def anchor_patterns(items, compiled, df, rows):
    """The question's own names that occur in the store (quoted labels, Capitalised names, ids), site names aside:
    a state showing all of them shows the thing asked about."""
    site_names = {re.sub(r"[-_]+", " ", r["site"]) for r in rows.values()}
    return [k for k, it in enumerate(items)
            if it.get("kind") == "phrase" and not it.get("derived") and df[k]
            and not any(compiled[k].search(name) for name in site_names)]


def newest_with(anchors, tfs, rows, meta, sites):
    """States that show every anchor (on the site the question names, if any), newest first."""
    keys = [key for key, tf in tfs.items() if all(k in tf for k in anchors)
            and (not sites or rows[key[0]]["site"] in sites)]
    return sorted(keys, key=lambda key: (meta[key][0], key), reverse=True)


def newest_strong(ranked, scores, meta, params):
    """States whose page covers nearly as much of the question as the best pages do, newest first."""
    pool = ranked[:params.get("latest_pool", 200)]
    best_page = max(scores[key][3] for key in pool)
    floor = params.get("near_best", 0.3) * scores[ranked[0]][0]
    near = [key for key in pool if scores[key][3] >= params.get("near_cov", 0.8) * best_page
            and scores[key][0] >= floor]
    return sorted(near, key=lambda key: meta[key][0], reverse=True)


def state_record(key, score, meta, rows, items, full):
    """One state, compact (the planner reads about 2,000 tokens): the first few also say what matched and where."""
    s, cov, matched, page_cov = score
    m, r = meta[key], rows[key[0]]
    rec = {"type": "state", "t": r["id"], "i": key[1], "s": round(s, 1), "time": m[0][:19], "ok": r["success"],
           "n": r["n"], "err": int(bool(m[4].strip()))}
    if full:
        rec.update(cov=round(cov, 2), m=[label(items[k]) for k in matched], url=m[1][:80])
    return rec


def run_records(ranked, scores, rows, meta, compiled, items, limit):
    """The best runs two ways: by their three best states, and by how well their goal matches the question.

    Goal terms are weighed by rarity among goals; `head` counts how many of the goal's first two words (its action
    and what it acts on: 'Cancel order', 'Create a milestone') are question terms.
    """
    per = defaultdict(list)
    for key in ranked:
        per[key[0]].append(scores[key][0])
    totals = {d: sum(sorted(v, reverse=True)[:3]) for d, v in per.items()}
    own = [k for k, it in enumerate(items) if not it.get("derived") or it.get("synonym")]  # pairs would count twice
    goals = {d: [k for k in own if compiled[k].search(r["goal"])] for d, r in rows.items()}
    gdf = Counter(k for ks in goals.values() for k in ks)
    gidf = weights_of(items, gdf, len(rows))
    terms = [k for k, it in enumerate(items) if it.get("kind") == "term"]
    goal_score, heads = {}, {}
    for d, r in rows.items():
        words = [w for w in re.findall(r"[A-Za-z]+", r["goal"]) if w.lower() not in FILLERS][:2]
        heads[d] = sum(1 for w in words if any(compiled[k].fullmatch(w) for k in terms))
        goal_score[d] = sum(gidf[k] for k in goals[d])
    by_states = sorted(totals, key=lambda d: -totals[d])[:limit]
    by_goal = sorted((d for d in rows if goal_score[d] > 0),
                     key=lambda d: (-(goal_score[d] * (1 + 0.5 * heads[d])), -totals.get(d, 0)))[:limit]
    errors = Counter(d for (d, _), m in meta.items() if m[4].strip())
    out = []
    interleaved = [d for pair in zip(by_goal, by_states) for d in pair]
    interleaved += by_goal[len(by_states):] + by_states[len(by_goal):]
    for d in dict.fromkeys(interleaved):  # both orders near the top, in case the output is cut short
        r = rows[d]
        out.append({"type": "traj", "t": r["id"], "s": round(totals.get(d, 0), 1), "gs": round(goal_score[d], 1),
                    "head": heads[d], "ok": r["success"], "n": r["n"], "ne": errors[d], "goal": r["goal"][:60]})
    return out


class Printer:
    """JSON lines up to a character budget, so the output the planner reads is never cut mid-line."""

    def __init__(self, max_chars):
        self.max_chars, self.used, self.lines = max_chars, 0, []

    def add(self, rec):
        line = json.dumps(rec, ensure_ascii=False)
        if self.used + len(line) + 1 > self.max_chars:
            return False
        self.lines.append(line)
        self.used += len(line) + 1
        return True

    def flush(self):
        print("\n".join(self.lines))


# -- reading states --------------------------------------------------------------------------------------------
def state_lines(root, d, index):
    path = os.path.join(root, "trajectories", d, "states", f"{index:04d}.md")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    return lines[lines.index("---") + 1:] if "---" in lines[:12] else lines


def best_lines(lines, compiled, weights, limit, after=0):
    """The page lines that carry the most question weight, in page order; each with `after` lines of text after it.

    Values sit after their labels in both page formats (a grid row after its name cell, a DOM text under its tag),
    so a quoted label brings the value that follows it. A line inside an earlier quote is not quoted again, and
    lines far weaker than the best one are left out.
    """
    scored = []
    for n, line in enumerate(lines):
        if "://" in line:
            continue  # a tab bar or link target: the url is in the state's header already
        hit = [k for k, rx in enumerate(compiled) if rx.search(line)]
        if hit:
            scored.append((sum(weights[k] for k in hit), -n))
    scored.sort(reverse=True)
    chosen, windows, seen = [], [], set()
    for weight, neg in scored:
        at = -neg
        text = lines[at].strip()
        if text[:60] in seen or weight < WEAK_LINE * scored[0][0]:
            continue
        quote, upto = [cut_line(text, compiled)], at
        if after:
            more, upto = following_text(lines, at, after)
            quote += more
        if any(a <= upto and at <= b for a, b in windows):
            continue
        seen.add(text[:60])
        windows.append((at, upto))
        chosen.append((at, " ⏎ ".join(dict.fromkeys(quote))[:QUOTE_WIDTH]))
        if len(chosen) >= limit:
            break
    return [quote for _, quote in sorted(chosen)]


def following_text(lines, at, count):
    """(up to `count` lines after line `at` that carry text, compacted; the index of the last line looked at)."""
    out, last, previous = [], at, _name_of(lines[at])
    for n in range(at + 1, min(len(lines), at + 1 + 4 * count)):
        last = n
        text = compact_line(lines[n])
        name = _name_of(text)
        if text and name not in previous:  # a child repeating (part of) its parent's name adds nothing
            out.append(text[:LINE_WIDTH])
            if len(out) >= count:
                break
        previous = name or previous
    return out, last


def _name_of(line):
    """The visible name of an accessibility-tree line ("link 'View All'" -> "View All"), else the line."""
    m = _AX_NAME.search(line)
    return m.group(1) if m else line.strip()


def compact_line(line):
    """A page line as worth quoting: its text, an input tag cut to its value, or '' for a bare tag."""
    text = line.strip()
    if not text:
        return ""
    name = _AX_NAME.search(text)
    if name and not re.search(r"[^\W_]", _ESCAPED.sub("", name.group(1))) and "=" not in text:
        return ""  # an icon glyph or an empty name
    value = _VALUE_ATTR.search(text)
    if _BARE.fullmatch(text):
        if not value:
            return ""
        tag = _TAG_NAME.search(text)
        ident = _TAG_ID.search(text)
        return f"<{tag.group(1) if tag else 'input'}{' ' + ident.group(0) if ident else ''} {value.group(0)}>"
    return text


def compact_error(error):
    """An error on one line: its distinct lines joined, cut to a readable length."""
    parts = list(dict.fromkeys(part.strip(" -") for part in error.splitlines() if part.strip(" -")))
    return " ⏎ ".join(parts)[:ERROR_WIDTH]


def cut_line(line, compiled):
    if len(line) <= LINE_WIDTH:
        return line
    first = min((m.start() for rx in compiled for m in [rx.search(line)] if m), default=0)
    start = max(0, min(first - LINE_WIDTH // 3, len(line) - LINE_WIDTH))
    return ("…" if start else "") + line[start:start + LINE_WIDTH] + ("…" if start + LINE_WIDTH < len(line) else "")


def target_label(lines, element):
    """What an action's element id shows on the page: `button 'Cancel'`, or a DOM tag and the text under it."""
    mark = f"[{element}]"
    for n, line in enumerate(lines):
        at = line.find(mark)
        if at < 0:
            continue
        rest = line[at + len(mark):].strip()
        if "'" in rest or '"' in rest:
            return rest[:80]
        depth = len(line) - len(line.lstrip("\t "))
        texts = []
        for nxt in lines[n + 1:n + 6]:
            if len(nxt) - len(nxt.lstrip("\t ")) <= depth and nxt.strip():
                break
            word = nxt.strip()
            if word and not word.startswith(("*[", "[", "<", "|")):
                texts.append(word)
        tag = re.sub(r"\s.*", "", rest).strip("<>/ ") or "element"
        return (f"{tag} '{' '.join(texts)[:60]}'" if texts else rest[:80])
    return ""


def described_action(action, lines):
    """The action with each element id followed by what the page showed for it."""
    if not action:
        return ""
    out = action[:240]
    for element in dict.fromkeys(_TARGET.findall(action)):
        label = target_label(lines, element)
        if label:
            out += f"  [{element} = {label}]"
    return out


def detail(params):
    """For each chosen state: time, url, the action with what it clicked, the error, the lines worth quoting."""
    root = rbk.default_store_dir()
    rows, by_id, meta = load_catalog(root)
    compiled = [python_regex(pattern_regex(it)) for it in params.get("patterns", [])]
    weights = [float(it.get("weight", 1.0)) for it in params.get("patterns", [])]
    out = Printer(params.get("max_chars", 6000))
    pages = {(tid, index): state_lines(root, by_id.get(tid), index) for tid, index, _ in params["states"]
             if (by_id.get(tid), index) in meta}
    names = [rx for rx, it in zip(compiled, params.get("patterns", []))
             if it.get("kind") == "phrase" and not it.get("derived")]
    common = furniture({meta[(by_id[t], i)][1].split("?")[0]: lines for (t, i), lines in pages.items()}.values())
    common = {line for line in common if not any(rx.search(line) for rx in names)}  # the thing asked about stays
    for tid, index, want_lines in params["states"]:
        d = by_id.get(tid)
        m = meta.get((d, index))
        if m is None:
            continue
        lines = pages[(tid, index)]
        rec = {"type": "step", "t": tid, "i": index, "time": m[0], "url": m[1][:100], "title": m[2][:80],
               "act": described_action(m[3], lines), "err": compact_error(m[4])}
        if want_lines:
            kept = [line if _IDS.sub("", line).strip() not in common else "" for line in lines]
            rec["lines"] = best_lines(kept, compiled, weights, want_lines, params.get("after", 3))
        out.add(rec)
    out.flush()


def furniture(pages):
    """Lines (element ids aside) on most of these pages (one per url: the same page seen twice shows the same
    content, not furniture), or naming the page: menus and headers."""
    pages = list(pages)
    counts = Counter(key for lines in pages for key in {_IDS.sub("", line).strip() for line in lines})
    floor = max(FURNITURE_PAGES, FURNITURE_SHARE * len(pages))
    common = {key for key, n in counts.items() if n >= floor}
    common |= {key for lines in pages for key in map(str.strip, lines[:3]) if key.startswith("RootWebArea")}
    return common


# -- screenshots -----------------------------------------------------------------------------------------------
def grey_pixels(path, width, height):
    """The image in grey at width x height (bytes), or None without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return None
    with Image.open(path) as img:
        img.draft("L", (width * 4, height * 4))  # a JPEG decodes at a fraction of its size: far faster
        return img.convert("L").resize((width, height), Image.BILINEAR).tobytes()


def image_hash(path, size=HASH_SIZE):
    """A dHash of `size` x `size` bits as an int: one bit per pixel brighter than its right neighbour (None
    without Pillow). Stored screenshots and the question's image go through the same function."""
    px = grey_pixels(path, size + 1, size)
    if px is None:
        return None
    bits = 0
    for row in range(size):
        for col in range(size):
            at = row * (size + 1) + col
            bits = bits << 1 | (px[at] > px[at + 1])
    return bits


def thumbnail(path):
    """The image in grey at THUMB size, hex: compared pixel by pixel when hashes tie (pages that differ in text)."""
    px = grey_pixels(path, *THUMB)
    return None if px is None else px.hex()


def nearest_screenshots(root, rows, meta, question, top):
    """The stored screenshots that look most like the question's image: dHash distance first, then, among
    the near ties, the mean difference of grey thumbnails."""
    found = []
    for (d, index), m in meta.items():
        if not m[6]:
            continue
        path = os.path.join(root, "trajectories", d, m[6])
        try:
            h = image_hash(path)
        except OSError:
            continue
        if h is None:
            return [{"type": "image", "error": "Pillow is not available in the sandbox"}]
        found.append((bin(h ^ int(question["hash"], 16)).count("1"), m[0], d, index, path))
    found.sort()
    if not found:
        return []
    near = [f for f in found if f[0] <= found[0][0] + TIE_BITS][:TIE_POOL]
    wanted = bytes.fromhex(question.get("thumb") or "")
    ranked = sorted((pixel_distance(wanted, f[4]), f) for f in near) + [(None, f) for f in found[len(near):]]
    return [{"type": "image", "t": rows[d]["id"], "i": index, "d": dist, "px": px, "time": time}
            for px, (dist, time, d, index, _path) in ranked[:top]]


def pixel_distance(wanted, path):
    """Mean absolute grey difference to the question's thumbnail (0 = the same picture)."""
    if not wanted:
        return 0.0
    try:
        have = bytes.fromhex(thumbnail(path) or "")
    except OSError:
        return 255.0
    if len(have) != len(wanted):
        return 255.0
    return round(sum(abs(a - b) for a, b in zip(wanted, have)) / len(wanted), 3)
