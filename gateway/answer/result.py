"""What one answer is (AnswerResult), the evidence shown as its text, and its pipeline overhead.

Shared by the pipeline (retrieve, log), generation (stream) and the outcome (decide, settle), so
that none imports another for its types.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from gateway.answer.citations import Citation, resolve
from gateway.answer.evidence_params import EVIDENCE, EvidenceParams
from gateway.answer.flags import AnswerFlag
from gateway.answer_fields import AnswerFields
from gateway.errors import GatewayError
from retrieval.types import Hit


class AnswerInputError(GatewayError):
    """The question itself cannot be answered as given (empty, too long): a 4xx, not a log row."""


@dataclass
class AnswerResult(AnswerFields[Citation, AnswerFlag]):
    """One answer: the fields of gateway.answer_fields.AnswerFields (the one declaration the log's columns
    and the API's answer derive from: declare a new field there), with their citations and flags typed."""

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["citations"] = [c.to_dict() for c in self.citations]
        data["flags"] = [str(f) for f in self.flags]  # the text form, as plain str (msgspec encodes no subclass)
        return data


def elapsed_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def use_evidence(res: AnswerResult, given: list[Hit], evidence: str, params: EvidenceParams = EVIDENCE) -> None:
    """Show the quoted evidence (cited sentences of the top passages) as the answer's text; params: how its
    passages are quoted (EvidenceParams.join_short_lines)."""
    res.answer = evidence
    for p in res.passages[: len(given)]:
        p["given"] = True
    res.citations, flags = resolve(evidence, given, supporting_fallback=False, params=params)
    if not res.citations and given:  # no sentence qualified: the top passage itself
        res.citations, _ = resolve("[1]", given[:1], supporting_fallback=False, params=params)
    res.flags.extend(f for f in flags if f.name != "no_valid_citation")


def overhead_ms(timings: Mapping[str, float]) -> float | None:
    """Question to first token, less what is not the pipeline's own work (embedding the query and the
    evidence's candidate sentences, the model's own time to first token, the wait for the model, its
    load); None before a first token."""
    t = timings
    if "ttft_ms" not in t or t.get("runtime_ttft_ms") is None:
        return None
    own: float = (t["ttft_ms"] - t["embed_ms"] - t.get("sentence_embed_ms", 0) - t["runtime_ttft_ms"]
                  - t.get("queue_ms", 0) - t["load_ms"])
    return round(own, 3)
