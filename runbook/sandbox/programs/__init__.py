"""The programs the agent's tools run inside the query sandbox (recall, search, show, rbplan) and `rbk`, the module its
python tool imports. They share the core library with the host (runbook.core, on their path in the sandbox as on
the host); this package's folder is only where they ship (see README.md here)."""
