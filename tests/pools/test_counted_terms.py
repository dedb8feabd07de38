"""The insert's workers count each document's terms ahead (count_terms); a page shown again is counted once and its
counts shared. The counts must be what the pool writer would count itself, in the same order."""

from collections import Counter

from runbook.core.text import tokenize
from runbook.pools.documents import count_terms, trajectory_docs
from tests.conftest import make_trajectory

START = "RootWebArea 'Shop'\n\t[1] link 'Home'\n\t[2] StaticText 'Welcome, Ünïcode shopper [٣]'"


def _fields(tid: str, texts: list[str]) -> list[dict[str, str]]:
    docs = trajectory_docs(make_trajectory(tid, len(texts), texts=texts), tid)
    return [dict(doc.fields) for doc in (*docs.slices, *docs.events, *docs.notes)]


def test_counts_are_the_writers_counts_also_for_a_page_shown_again():
    runs = [("t-a", [START, "RootWebArea 'Cart'\n\t[5] button 'Pay'", START]), ("t-b", [START, START])]
    for tid, texts in runs:  # t-b's pages were all counted before, in t-a
        expected = _fields(tid, texts)
        counted = count_terms(trajectory_docs(make_trajectory(tid, len(texts), texts=texts), tid))
        docs = [*counted.slices, *counted.events, *counted.notes]
        assert [doc.fields for doc in docs] == [{} for _ in docs]
        for doc, fields in zip(docs, expected):
            assert doc.counts is not None and list(doc.counts) == list(fields)
            for name, text in fields.items():
                assert list(doc.counts[name].items()) == list(Counter(tokenize(text)).items())
