"""What one question asks for: the AnswerRequest that the web, the OpenAI route, the CLI and replay build.

Everything the answer depends on from its asker travels in it (question, scope, mode, who asked);
what the pipeline runs on travels apart (gateway.answer.deps), and so do the two controls of one
run, a cancel event and the web's generation slot (gateway.answer.pipeline.answer_events).
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from gateway.answer.result import AnswerInputError
from gateway.answer_fields import Client

__all__ = ["MAX_QUESTION_CHARS", "MODES", "AnswerRequest", "Mode"]

MAX_QUESTION_CHARS = 2000
# generate: the model answers, checked against its passages; extractive: the evidence only, no model.
Mode = Literal["generate", "extractive"]
MODES: tuple[Mode, ...] = get_args(Mode)


class AnswerRequest(msgspec.Struct, frozen=True, kw_only=True):
    question: str
    scope: tuple[str, ...] = ()  # manuals (file name, title or sha256 prefix); empty: all of them
    mode: Mode | None = None  # None: the configured answer.mode
    client: Client = "cli"  # who asked, as the answer log records it
    key_name: str | None = None  # the API key's name, when one was used
    version: str | None = None  # an index version to answer from instead of the active one
    max_tokens: int | None = None  # a cap on the answer's tokens, below answer.max_answer_tokens
    # What retrieval searches for (default: the question): a chat's follow-up ("and the torque for
    # it?") needs the conversation's earlier turns to find its page.
    search_query: str | None = None

    def mode_or(self, configured: str) -> str:
        """The mode this request runs in: its own, else the configured one."""
        return self.mode or configured

    def checked(self, configured_mode: str) -> AnswerRequest:
        """The request with its question stripped and its mode decided; AnswerInputError (a 4xx, no
        log row) when the question is empty or too long, or the mode unknown."""
        question = self.question.strip() if isinstance(self.question, str) else ""
        if not question:
            raise AnswerInputError("the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise AnswerInputError(f"the question is longer than {MAX_QUESTION_CHARS} characters")
        mode = self.mode_or(configured_mode)
        if mode not in MODES:
            raise AnswerInputError("mode must be 'generate' or 'extractive'")
        return msgspec.structs.replace(self, question=question, mode=mode)

    @property
    def query(self) -> str:
        """What retrieval searches for (capped at twice a question's length)."""
        return (self.search_query or self.question).strip()[: 2 * MAX_QUESTION_CHARS]
