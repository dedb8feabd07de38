"""Question analysis (kind, key terms, exact phrases): defined in rbcore, which the sandbox programs share."""
from .sandbox.programs.rbcore.question import (KINDS, STOP_WORDS, QuestionAnalysis, analyze,  # noqa: F401
                                               normalize_term)
