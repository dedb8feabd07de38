"""End-to-end checks that exercise several layers at once, so they sit above them: `runbook sandbox check`
(every limit a sandbox backend claims, probed, and every agent tool run once in it)."""
