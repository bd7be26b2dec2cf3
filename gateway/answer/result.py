"""What one answer is (AnswerResult) and the two ways evidence stands in for a model's text.

Shared by the pipeline (retrieve, decide, log) and generation (stream, check support), so that
neither imports the other for its types.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from gateway.answer.citations import Citation, resolve
from gateway.errors import GatewayError
from gateway.records.answers import Outcome
from retrieval.types import Hit

log = logging.getLogger("gateway.answer.pipeline")


class AnswerInputError(GatewayError):
    """The question itself cannot be answered as given (empty, too long): a 4xx, not a log row."""


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
    flags: list[str] = field(default_factory=list)
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
        return data


def elapsed_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def use_evidence(res: AnswerResult, given: list[Hit], evidence: str) -> None:
    """Show the quoted evidence (cited sentences of the top passages) as such: evidence_only."""
    res.outcome, res.answer = "evidence_only", evidence
    for p in res.passages[: len(given)]:
        p["given"] = True
    res.citations, flags = resolve(evidence, given, supporting_fallback=False)
    if not res.citations and given:  # no sentence qualified: the top passage itself
        res.citations, _ = resolve("[1]", given[:1], supporting_fallback=False)
    res.flags.extend(f for f in flags if f != "no_valid_citation")


def fallback(res: AnswerResult, given: list[Hit], evidence: str, why: str) -> None:
    """The runtime failed before any text: show the evidence and record why."""
    res.mode, res.error = "extractive_fallback", why
    res.flags.append("runtime_failed")
    log.warning("answer %s: generation unavailable, evidence only: %s", res.id, why)
    use_evidence(res, given, evidence)
