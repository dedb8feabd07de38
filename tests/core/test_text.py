"""core.text: `term_counts` is `Counter(tokenize(text))` exactly, term for term and in order (the order gives new
terms their ids in the pools' vocabulary, so a store would differ byte for byte otherwise)."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runbook.core.text import shorten, term_counts, tokenize

CASES = [
    "",
    "   \n\t ",
    "RootWebArea 'Shop'\n\t[12] link 'Home'\n\t\t[13] StaticText 'Sale 50%'",
    "a[12]b [x] [12 12] [] [3]4 x_y __init__ a-b.c/d?e=f&g",
    "glyphs \\ue123x \\uF00Dy \\uE12 \\u00e9 \\\\ue123 \\",
    "ids in other digits [١٢٣] x[٤]y and plain ١٢٣",
    "Café NAÏVE façade – “quoted” ‘x’ naïve\xa0nbsp\u2003em 東京 タワー ｆｕｌｌ",
    "İstanbul ǅemal ß ẞ ﬁne Ⅻ ½ ²",
    "final ΟΔΟΣ. ΟΔΟΣ's Σ alone",
    "lone \ud800 surrogate",
    "order: beta alpha beta Gamma ALPHA gamma é É",
    "\x1c\x1dcontrol\x1echars\x85next\u2028line\rcr",
]


@pytest.mark.parametrize("text", CASES)
def test_term_counts_equals_counting_the_tokens(text):
    expected = Counter(tokenize(text))
    got = term_counts(text)
    assert list(got.items()) == list(expected.items())


def test_term_counts_equals_counting_the_tokens_on_mixed_pages():
    pieces = ["[7] button 'Go'", "Ünïcode", "x_1", "\\ue0ff", "ΣΑΣ", "12", "a.b", "[٣]", "—", "\t", "\n"]
    for n in range(200):
        text = " ".join(pieces[(n * k + k * k) % len(pieces)] for k in range(n % 17))
        assert list(term_counts(text).items()) == list(Counter(tokenize(text)).items()), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ09 _[]\\uUeEfF\t\n.'-éÉΣσ١İß\xa0–東\ud800")), max_size=60))
def test_term_counts_equals_counting_the_tokens_on_any_text(text):
    assert list(term_counts(text).items()) == list(Counter(tokenize(text)).items())


def test_a_shortened_text_keeps_its_first_sentences_or_the_head_and_tail_of_the_first():
    message = "Error. The value of Admin scope can't be empty. Fill it in and save the form again, please."
    assert shorten(message, 200) == message
    assert shorten(message, 60) == "Error. The value of Admin scope can't be empty. …"
    long_name = "Magnetic Metal Stainless Steel D-pads Kits Directional Pad Replacement Parts for Xbox One Controller"
    cut = shorten(f"{long_name} has been added to your Wish List. Click here to continue shopping.", 100)
    assert cut.startswith("Magnetic Metal") and cut.endswith("has been added to your Wish List. …")
    assert len(cut) <= 100


@given(st.text(alphabet="ab .", max_size=400), st.integers(min_value=20, max_value=300))
def test_a_shortened_text_is_never_much_longer_than_its_limit(text, limit):
    assert len(shorten(text, limit)) <= limit + 2  # the " …" that says sentences were left out
