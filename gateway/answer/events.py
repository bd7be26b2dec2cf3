"""What one answer says while it is made: a tagged union of msgspec Structs.

`answer_events()` yields, in order: one `Retrieval` (the passages found), one `Evidence` (the best
cited sentences, shown at once) unless the answer ends before it, any number of `Text` (the model's
answer as it streams) and exactly one `Final` (the logged AnswerResult). The web adds `Queue` while
a generate-mode ask waits for the model. Consumers match on the class (`case Text(text=t)`); the
tag is each event's `type` name, which gateway.web.bridge turns into the SSE event names (`text` is
sent as `token`), so the wire keeps the names and keys it always had.
"""

from __future__ import annotations

from typing import TypedDict

import msgspec

from gateway.answer.result import AnswerResult

__all__ = ["AnswerEvent", "Event", "Evidence", "Final", "Queue", "Retrieval", "Strength", "Text", "kind"]


class Strength(TypedDict, total=False):
    """How strong the passages are as evidence (gateway.answer.evidence_strength.evidence_is_strong)."""

    best_similarity: float | None  # the best cosine of the question to a passage (None: no passage)
    agree: bool  # dense and lexical search agree on a top passage
    cross_language: bool  # only when true: the question and the first passage are in different languages
    word_share: float  # outside English, where the question's words decide: the best share a passage holds
    word_share_floor: float  # ... and the share that makes evidence (OTHER_MIN_TERMS, CROSS_MIN_TERMS)


class Event(msgspec.Struct, frozen=True, tag_field="type"):
    """The base of every answer event; its `type` tag is the class's own name for it."""


class Retrieval(Event, frozen=True, tag="retrieval"):
    """The passages the answer is built from (the top `max_passages`) and how strong they are."""

    id: str  # the answer's id, known before anything else
    index_version: str | None
    passages: list[dict[str, object]]  # retrieval.types.Hit.to_dict()
    evidence: Strength  # evidence_strength.evidence_is_strong


class Evidence(Event, frozen=True, tag="evidence"):
    """The best cited sentences of the passages, shown before (or instead of) the model's answer."""

    text: str
    citations: list[dict[str, object]]  # gateway.answer.citations.Citation.to_dict()


class Text(Event, frozen=True, tag="text"):
    """A piece of the answer as it streams (the not-found notice comes as one piece too)."""

    text: str


class Queue(Event, frozen=True, tag="queue"):
    """While a generate-mode ask waits for the model: how many answers are ahead of it (web only)."""

    ahead: int


class Final(Event, frozen=True, tag="final"):
    """The end of every answer: its result, already in the answer log."""

    result: AnswerResult


AnswerEvent = Retrieval | Evidence | Text | Queue | Final


def kind(event: Event) -> str:
    """The event's `type` tag ("retrieval", "evidence", "text", "queue" or "final")."""
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag
