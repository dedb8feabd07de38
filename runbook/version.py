"""runbook's version: the one definition, read by pyproject.toml, run folders, store records and both servers."""

__version__ = "0.1.0"
