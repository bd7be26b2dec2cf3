"""What an answer's flags can say: one closed set of names (Flag) and the flag value (AnswerFlag).

A flag is a name and, for some, a detail: "cut_at_max_tokens", "weak_evidence: best similarity 0.31",
"quantity_not_in_evidence: voltage, current". An AnswerFlag is that text (a `str`, so the API's `flags`,
the answer log and everything reading them keep the form they always had) built from a typed name and
its detail, and carrying both: `flag.name`, `flag.detail`. Every place that raises a flag builds one
(`AnswerFlag("named_manual_first", named)`), so a name outside Flag does not type-check.

The structured form goes out beside the text (docs/api.md: `flag_details`, `[{"name", "detail"}]`),
so that no reader splits the text at ":" again; a text read back from the answer log becomes that form
in one place, gateway.answer_fields.flag_parts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from gateway.answer_fields import flag_parts

Flag = Literal[
    # retrieval: the question and the passages
    "searched_with_conversation",  # a chat's follow-up: retrieval searched with the conversation
    "searched_named_manuals",  # detail: the titles of the manuals the question names, searched among (retrieval.named)
    "named_manual_first",  # detail: the manual the question names, whose passages were put first
    "weak_evidence",  # detail: "best similarity 0.31" (not found)
    "quantity_not_in_evidence",  # detail: the kinds asked for that the passages state none of (not found)
    "value_not_for_question",  # detail: the kinds stated only apart from the question's words (not found)
    "evidence_by_words_only",  # the embedder failed on the evidence's sentences: words alone picked them
    # the prompt
    "max_tokens_reduced",
    "passages_dropped_to_fit",  # detail: how many
    "passage_truncated_to_fit",
    # generation
    "cut_at_max_tokens",
    "timeout",
    "backend_crashed",
    "runtime_failed",
    "consumer_closed",
    # the model's text held against its passages (gateway.answer.support, gateway.answer.citations)
    "dropped_invalid_citations",  # detail: the numbers, "[7, 9]"
    "no_valid_citation",
    "unsupported_sentences_removed",  # detail: how many
    "citations_inferred",  # detail: how many
    "citations_corrected",  # detail: how many
    "no_supported_sentence",
    "mostly_unsupported",
    "yes_contradicted",
    "answer_off_question",
    "model_declined",
    "values_not_in_passages",
    "unqualified_model",  # detail: why the model has not earned the green badge (gateway.qualification.answer_mode)
    # the log
    "not_logged",
]
FLAGS: tuple[Flag, ...] = get_args(Flag)


class AnswerFlag(str):
    """One flag: the text "name" or "name: detail", with its parts as `name` and `detail` ("" for none)."""

    name: Flag
    detail: str

    def __new__(cls, name: Flag, detail: str | None = None) -> AnswerFlag:
        flag = super().__new__(cls, name if detail is None else f"{name}: {detail}")
        flag.name, flag.detail = name, detail or ""
        return flag

    def __getnewargs__(self) -> tuple[str, str | None]:  # type: ignore[override]  # copy and pickle
        return self.name, (self.detail if str(self) != self.name else None)

    def to_dict(self) -> dict[str, str]:
        """The structured form the API carries beside the text (`flag_details`)."""
        return {"name": self.name, "detail": self.detail}


def flag_details(flags: Iterable[str]) -> list[dict[str, str]]:
    """The flags as {"name", "detail"}, in order (docs/api.md, `flag_details`); a plain text (an
    AnswerResult built from a logged row) as the log's flag_parts reads it."""
    return [f.to_dict() if isinstance(f, AnswerFlag) else flag_parts(f) for f in flags]
