"""Method R's knowledge pools and their search.

insert_listener(store)   the StoreWriter listener that keeps the pools in step with `runbook insert`
reindex(store)           rebuild every pool from the stored trajectories (`runbook reindex`)
Retriever(store)         search: evidence items (notes, events, state slices) and a shortlist of states
"""

from .build import PoolListener, ReindexReport, insert_listener, reindex
from .search import RetrievalSettings, Retriever

__all__ = ["insert_listener", "reindex", "PoolListener", "ReindexReport", "Retriever", "RetrievalSettings"]
