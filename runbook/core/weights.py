"""BM25's formula, the one method R, `recall` and the planner's scan all weigh terms with. Kept apart from the
index (runbook.core.bm25) so that a program that scores a few numbers does not pay numpy's import (~0.25 s a call)."""

from __future__ import annotations

import math
from typing import Any

K1 = 1.2
B = 0.75


def idf(n_docs: Any, df: Any) -> Any:
    """BM25's inverse document frequency (numbers or numpy arrays)."""
    ratio = (n_docs - df + 0.5) / (df + 0.5)
    if isinstance(ratio, (int, float)):
        return math.log1p(ratio)
    import numpy as np  # an array: numpy is loaded already

    return np.log1p(ratio)


def term_weight(tf: Any, doc_len: Any, avg_len: Any, k1: float = K1, b: float = B) -> Any:
    """BM25's saturated, length-normalised term frequency (numbers or numpy arrays)."""
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / max(avg_len, 1e-9)))
