"""Reader-based scoring of one context: the reader answers, then the question's eval function grades the answer.

As LongMemEval-V2's harness scores: rule functions see the last `\\boxed{}` of the reply, the judges see the whole
reply and the extracted answer; an UNKNOWN answer (or an empty reply) scores 0 whatever the function says.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..config import Settings
from ..context import Context
from ..errors import ConfigError
from ..models.judge import Judge
from ..models.reader import HOW_TO_CONFIGURE, Reader, chat_model
from ..reader_tokens import ReaderCounter
from .config import ModelSpec, ReaderSpec
from .questions import Question
from .scoring import is_unknown, parse_eval_spec, score_rule


@dataclass
class Grade:
    """The reader's answer to one question and its score, with the harness's field names."""

    response_raw: str
    response_parsed_boxed: str
    is_unknown: bool
    score: float
    usage: dict[str, int] = field(default_factory=dict)
    memory_context_original_token_count: int = 0
    memory_context_token_count: int = 0
    judge_label: int | None = None
    judge_reason: str = ""
    grade_error: str = ""
    """Why the answer could not be graded (the reader or the judge failed); it then scores 0."""

    @property
    def memory_context_was_truncated(self) -> bool:
        return self.memory_context_original_token_count > self.memory_context_token_count

    def to_json(self) -> dict:
        return {
            **asdict(self),
            "score_bool": self.score > 0,
            "memory_context_was_truncated": self.memory_context_was_truncated,
        }


class Grader:
    """Answers with the reader, grades with the rule or the judge a question's eval function names."""

    def __init__(self, reader: Reader, judge: Judge, *, max_context_tokens: int | None = None):
        self.reader = reader
        self.judge = judge
        self.max_context_tokens = max_context_tokens

    def grade(self, question: Question, context: Context) -> Grade:
        domain = question.domain if question.domain in ("web", "enterprise") else None
        try:
            answer = self.reader.answer(
                context,
                question=question.question,
                image=question.image,
                max_context_tokens=self.max_context_tokens,
                domain=domain,
            )
        except ConfigError:
            raise  # a bad key or model name: every question would fail the same way
        except Exception as exc:  # a timeout or a server error after retries: this question scores 0
            return Grade("", "", False, 0.0, grade_error=f"reader: {type(exc).__name__}: {exc}")
        grade = Grade(
            answer.response,
            answer.answer,
            is_unknown(answer.answer),
            0.0,
            dict(answer.usage or {}),
            answer.original_tokens,
            answer.context_tokens,
        )
        if grade.is_unknown or not answer.response.strip():
            return grade
        spec = parse_eval_spec(question.eval_function)
        if not spec.judged:
            grade.score = float(score_rule(spec, answer.response, question.answer, question.answer_phrases))
            return grade
        try:
            verdict = self.judge.grade(
                spec.name,
                question=question.question,
                reference=question.answer,
                response=answer.response,
                final_answer=answer.answer,
            )
        except ConfigError:
            raise
        except Exception as exc:
            grade.grade_error = f"judge: {type(exc).__name__}: {exc}"
            return grade
        grade.judge_label, grade.judge_reason, grade.score = verdict.label, verdict.reason, float(verdict.label)
        return grade


def build_grader(reader: ReaderSpec, judge: ModelSpec | None, settings: Settings | None = None) -> Grader:
    """The Grader of a bench config: unset reader fields come from the RUNBOOK_READER_* settings; without a
    [judge] the reader's model judges."""
    from ..config import config_path, load_settings

    settings = settings or load_settings()
    provider = reader.provider or settings.reader_provider
    base_url = reader.base_url or (settings.reader_base_url if provider == "openai" else None)
    model = reader.model or settings.reader_model
    if not provider or not (model or base_url):
        raise ConfigError(
            HOW_TO_CONFIGURE.format(config_path=config_path()).replace("`runbook answer`", "A reader-scored bench")
            + "\nOr run it with --no-reader for reader-free scores."
        )
    reader_client = chat_model(
        provider, model, settings, base_url=base_url, max_output_tokens=reader.max_output_tokens, timeout=reader.timeout
    )
    judge_spec = judge or ModelSpec(provider, model, base_url, reader.max_output_tokens, reader.timeout)
    judge_client = chat_model(
        judge_spec.provider or provider,
        judge_spec.model or model,
        settings,
        base_url=judge_spec.base_url or base_url,
        max_output_tokens=judge_spec.max_output_tokens,
        timeout=judge_spec.timeout,
    )
    return Grader(
        Reader(reader_client, domain=reader.domain, images=reader.images, counter=ReaderCounter(reader.tokenizer)),
        Judge(judge_client),
        max_context_tokens=reader.memory_context_max_tokens,
    )


def model_names(grader: Grader) -> dict[str, str | None]:
    """The reader's and the judge's model names, for a run's config.json."""
    return {
        "reader_model": getattr(grader.reader.client, "model", None),
        "judge_model": getattr(grader.judge.client, "model", None),
    }
