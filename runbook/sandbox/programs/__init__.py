"""The programs run inside the query sandbox (search, show, recall, rbk) and `rbcore`, the code they share with
the host: state files, question analysis, tokenising and stemming, the pools, BM25 and fusion. Standard library
and numpy only, because the sandbox has nothing else; the host imports `runbook.sandbox.programs.rbcore`."""
