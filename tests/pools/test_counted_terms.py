"""The insert's workers count each document's terms ahead (count_terms); a page shown again is counted once and its
counts shared. The counts must be what the pool writer would count itself, in the same order."""

from collections import Counter

import numpy as np

from runbook.core.pools import POOL_FIELDS
from runbook.core.text import tokenize
from runbook.pools.documents import count_terms, trajectory_docs
from tests.conftest import make_trajectory

START = "RootWebArea 'Shop'\n\t[1] link 'Home'\n\t[2] StaticText 'Welcome, Ünïcode shopper [٣]'"


def _fields(tid: str, texts: list[str]) -> list[dict[str, str]]:
    docs = trajectory_docs(make_trajectory(tid, len(texts), texts=texts), tid)
    return [dict(doc.fields) for name in POOL_FIELDS for doc in getattr(docs, name)]


def test_counts_are_the_writers_counts_also_for_a_page_shown_again():
    runs = [("t-a", [START, "RootWebArea 'Cart'\n\t[5] button 'Pay'", START]), ("t-b", [START, START])]
    for tid, texts in runs:  # t-b's pages were all counted before, in t-a
        expected = _fields(tid, texts)
        counted = count_terms(trajectory_docs(make_trajectory(tid, len(texts), texts=texts), tid))
        pools = {name: getattr(counted, name) for name in POOL_FIELDS}
        assert [doc.fields for docs in pools.values() for doc in docs] == [{} for docs in pools.values() for _ in docs]
        written = {name: [{} for _ in docs] for name, docs in pools.items()}  # per document: field -> its counts
        for name, fields in POOL_FIELDS.items():
            for field in fields:
                packed = counted.counted[f"{name}/{field}"]
                terms, counts, ends = packed.term_list(), packed.counts.tolist(), np.cumsum(packed.sizes).tolist()
                for n, (start, end) in enumerate(zip([0, *ends], ends)):
                    if end > start:
                        written[name][n][field] = list(zip(terms[start:end], counts[start:end]))
        for doc, fields in zip([d for name in POOL_FIELDS for d in written[name]], expected):
            assert list(doc) == [name for name, text in fields.items() if tokenize(text)]
            for name, text in fields.items():
                assert doc.get(name, []) == list(Counter(tokenize(text)).items())
