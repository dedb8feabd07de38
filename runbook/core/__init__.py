"""Code shared across the sandbox boundary: the host imports it as `runbook.sandbox.programs.rbcore`, the
programs inside the sandbox as `rbcore` (its folder is on their PYTHONPATH). Standard library and numpy only.

    catalog      the catalog, read-only
    filters      the filters a reader's calls take (sites, outcome, fields)
    patterns     the regex of a search pattern (phrase, term, stem)
    question     what a question asks for: kind, key terms, exact phrases, wants the latest value
    text         page lines, tokenising and the stemmer every index uses
    pools        reading method R's pools (the store's pools/ folder)
    bm25         the one BM25: per-term columns cached per manifest stamp
    boilerplate  lines on most pages of a site
    excerpt      the lines of a page worth showing for a query
    fusion       reciprocal rank fusion, latest-first ordering, duplicates
    recall       method R's ranking: notes, events and state slices for a question
"""
