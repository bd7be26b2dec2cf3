"""Response bodies of /api/v1's answer side (answers, the answer log, search), as msgspec Structs so
that the OpenAPI document types every answer; the admin side is gateway.web.responses_admin.

Each Struct mirrors the dict its route returned before, key for key and in the same order (msgspec
encodes fields in declaration order), so the JSON on the wire is unchanged. Rows whose shape is
open (manifests, hits, timings, support checks) stay `dict[str, Any]` fields.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from gateway.answer.flags import Flag
from gateway.records.answer_rows import Outcome


# -- answers -----------------------------------------------------------------------------------
class CitationOut(msgspec.Struct):
    """One citation: gateway.answer.citations.Citation.to_dict()."""

    n: int
    chunk_id: str
    manual: str
    title: str
    manual_sha256: str
    page: int
    heading: str
    passage: str
    sentences: list[str]
    spans: list[list[int]]
    pdf_url: str
    supporting: bool
    # The number printed on the page when it differs from `page` (PDF page 12 printed "11");
    # null when the PDF defines no page labels. Last and defaulted: rows logged before it lack it.
    page_label: str | None = None
    # "ocr" when the passage was read from the page image by OCR (Tesseract): the UI says "OCR, check
    # the page"; ocr_confidence is its mean word confidence (0-100), null for text-layer passages.
    source: str = "text"
    ocr_confidence: float | None = None
    # ISO 639-1 code of the passage's language ("zh", "de", "en"): the quote is in the manual's
    # language, whatever the question's; "" for index versions written before languages.
    language: str = ""
    # The passage's number among those given (`passages[].n`, the model's prompt, `draft` and `support`);
    # `n` is the card's number, 1..N in the order the answer cites them. 0 in rows logged before it.
    passage_n: int = 0


class FlagOut(msgspec.Struct):
    """One of an answer's flags, structured: its name (gateway.answer.flags.Flag, the closed set) and
    its detail ("" for none). `flags` carries the same as text, "name" or "name: detail"."""

    name: Flag
    detail: str


class AnswerOut(msgspec.Struct):
    """One answer as POST /api/v1/ask returns it: gateway.answer.pipeline.AnswerResult.to_dict()."""

    id: str
    time: str
    question: str
    scope: list[str]
    answer: str
    outcome: Outcome
    mode: str
    citations: list[CitationOut]
    flags: list[str]
    flag_details: list[FlagOut]
    passages: list[dict[str, Any]]
    index_version: str | None
    chain_id: str | None
    profile: str | None
    generation_config: dict[str, Any]
    timings: dict[str, Any]
    error: str | None
    client: str
    key_name: str | None
    draft: str
    support: list[dict[str, Any]]

    @classmethod
    def of(cls, data: dict[str, Any]) -> AnswerOut:
        """From AnswerResult.to_dict(); the values are kept as they are (no copy, no conversion)."""
        return cls(**{**data, "citations": [CitationOut(**c) for c in data["citations"]],
                      "flag_details": [FlagOut(**f) for f in data["flag_details"]]})


class AnswerRow(msgspec.Struct):
    """One row of the answer log as AnswerLog.query() gives it: the `answers` columns in table order
    (JSON columns decoded), then its feedback. Rows written by older versions may lack citation
    fields added since, so citations stay open.
    """

    id: str
    time: str
    question: str
    scope: list[str]
    answer: str
    outcome: str
    mode: str
    flags: list[str]
    citations: list[dict[str, Any]]
    passages: list[dict[str, Any]]
    index_version: str | None
    chain_id: str | None
    profile: str | None
    generation_config: dict[str, Any] | None
    retrieval_ms: float | None
    embed_ms: float | None
    ttft_ms: float | None
    total_ms: float | None
    prompt_tokens: int | None
    output_tokens: int | None
    decode_tps: float | None
    timings: dict[str, Any]
    client: str
    key_name: str | None
    error: str | None
    draft: str
    support: list[dict[str, Any]]
    flag_details: list[FlagOut]  # `flags` structured (AnswerOut's)
    feedback: list[dict[str, Any]]

    @classmethod
    def of(cls: type[_Row], row: dict[str, Any]) -> _Row:
        """From AnswerLog.query() / get() (AnswerDetail: with its chain)."""
        return cls(**{**row, "flag_details": [FlagOut(**f) for f in row["flag_details"]]})


_Row = TypeVar("_Row", bound=AnswerRow)


class AnswerDetail(AnswerRow):
    """One logged answer with its artifact chain (provenance)."""

    chain: dict[str, Any] | None


class AnswerPage(msgspec.Struct):
    """A page of the log, newest first; total: how many answers the filters match in all (for "51-100 of 84")."""

    answers: list[AnswerRow]
    limit: int
    offset: int
    total: int = 0


class FeedbackOut(msgspec.Struct):
    answer_id: str
    thumbs: int
    comment: str = ""


class SearchOut(msgspec.Struct):
    query: str
    version: str | None
    took_ms: float
    hits: list[dict[str, Any]]
