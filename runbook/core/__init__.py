"""runbook's core library: what both sides of the sandbox run, defined once. The host imports it as `runbook.core`;
inside the sandbox the same files sit at /opt/runbook/lib/runbook/core (a namespace package `runbook` that holds
nothing else), so the programs there import it by the same name. Standard library and numpy only, and nothing else
of runbook (an import contract in pyproject.toml checks it).

    the store      layout, statefile, catalog, files, records, filters, reader, grep, ripgrep, values, images, errors
    pages          page, page_dom, blocks, excerpt, findings, actions, messages, text
    questions      question, patterns, program_args
    method R       pools, segments, bm25, weights, fusion, boilerplate, recall, hits
    the planner    plan (the program rbplan), scan, scoring, scanout, choice, detail

docs/architecture.md says which module holds what.
"""
