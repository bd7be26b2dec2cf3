"""What one answer is (AnswerResult), the evidence shown as its text, and its pipeline overhead.

Shared by the pipeline (retrieve, log), generation (stream) and the outcome (decide, settle), so
that none imports another for its types.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from gateway.answer.citations import Citation, resolve
from gateway.answer.flags import AnswerFlag, flag_details
from gateway.errors import GatewayError
from gateway.records.answer_rows import Outcome
from retrieval.types import Hit


class AnswerInputError(GatewayError):
    """The question itself cannot be answered as given (empty, too long): a 4xx, not a log row."""


class _FlagDetails:
    """AnswerResult.flag_details: its flags as {"name", "detail"}, read from `flags` each time (one list,
    two forms; nothing to keep in step). A dataclass field, so that the API's AnswerOut mirrors it."""

    def __get__(self, result: AnswerResult | None, owner: type | None = None) -> list[dict[str, str]]:
        return [] if result is None else flag_details(result.flags)

    def __set__(self, result: AnswerResult, value: object) -> None:
        """The dataclass's __init__ assigns the default: nothing to store."""


@dataclass
class AnswerResult:
    id: str
    time: str
    question: str
    scope: list[str]
    answer: str = ""
    outcome: Outcome = "answered"
    mode: str = "generate"  # generate | extractive | extractive_fallback
    citations: list[Citation] = field(default_factory=list)
    flags: list[AnswerFlag] = field(default_factory=list)  # gateway.answer.flags; each a str, "name[: detail]"
    # the same flags as {"name", "detail"} (docs/api.md): derived from `flags`, never stored
    flag_details: _FlagDetails = field(default=_FlagDetails(), init=False, repr=False, compare=False)
    passages: list[dict[str, Any]] = field(default_factory=list)  # retrieved hits (+ n, given)
    index_version: str | None = None
    chain_id: str | None = None
    profile: str | None = None
    generation_config: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    client: str = "cli"
    key_name: str | None = None
    draft: str = ""  # the model's text as generated; `answer` keeps its supported sentences
    support: list[dict[str, Any]] = field(default_factory=list)  # gateway.answer.support, one per sentence

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["citations"] = [c.to_dict() for c in self.citations]
        data["flags"] = [str(f) for f in self.flags]  # the text form, as plain str (msgspec encodes no subclass)
        return data


def elapsed_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def use_evidence(res: AnswerResult, given: list[Hit], evidence: str) -> None:
    """Show the quoted evidence (cited sentences of the top passages) as the answer's text."""
    res.answer = evidence
    for p in res.passages[: len(given)]:
        p["given"] = True
    res.citations, flags = resolve(evidence, given, supporting_fallback=False)
    if not res.citations and given:  # no sentence qualified: the top passage itself
        res.citations, _ = resolve("[1]", given[:1], supporting_fallback=False)
    res.flags.extend(f for f in flags if f.name != "no_valid_citation")


def overhead_ms(timings: dict[str, Any]) -> float | None:
    """Question to first token, less what is not the pipeline's own work (embedding the query and the
    evidence's candidate sentences, the model's own time to first token, the wait for the model, its
    load); None before a first token."""
    t = timings
    if "ttft_ms" not in t or t.get("runtime_ttft_ms") is None:
        return None
    own: float = (t["ttft_ms"] - t["embed_ms"] - t.get("sentence_embed_ms", 0) - t["runtime_ttft_ms"]
                  - t.get("queue_ms", 0) - t["load_ms"])
    return round(own, 3)
