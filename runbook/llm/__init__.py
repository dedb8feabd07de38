"""Model clients that are not policies: the reader, settings, and fake servers for tests.

    reader.Reader                      LongMemEval-V2's reader: answers from a Context, `\\boxed{...}`
    config.load_settings()             defaults < config file < environment < arguments
    fakes                              loopback HTTP servers speaking both protocols from a script

The policies that drive method C's agent (Anthropic, OpenAI-compatible, offline) live in runbook.policies.
"""
