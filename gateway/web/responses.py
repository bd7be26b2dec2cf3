"""Response bodies of /api/v1's answer side (answers, the answer log, search), as msgspec Structs so
that the OpenAPI document types every answer; the admin side is gateway.web.responses_admin.

Each Struct mirrors the dict its route returned before, key for key and in the same order (msgspec
encodes fields in declaration order), so the JSON on the wire is unchanged. Rows whose shape is
open (manifests, hits, timings, support checks) stay `dict[str, object]` fields. AnswerOut and AnswerRow
are not written out field by field: they are derived from the one declaration of an answer's fields
(gateway.answer_fields.AnswerFields) and the log's columns, so a new logged field reaches both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast, get_args, get_origin, get_type_hints

import msgspec

from gateway.answer.flags import Flag
from gateway.answer_fields import AnswerFields, CitationT, FlagDetails, FlagT, logged
from gateway.records.answer_rows import COLUMNS

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


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


# -- the answer's wire types, derived ------------------------------------------------------------
# How the web writes what the answer core holds: a citation as CitationOut, a flag as its text, the
# flags' structured form as FlagOut. Any other field goes out in the type it is declared with.
_WIRE: dict[object, object] = {CitationT: CitationOut, FlagT: str, FlagDetails: list[FlagOut]}
# Where a logged row is looser than a fresh answer, as the log has always typed it: rows written by
# older versions may lack citation fields added since (citations stay open) or a generation config,
# and an outcome is read back as it was written.
_ROW: dict[str, object] = {"outcome": str, "citations": list[dict[str, object]],
                           "generation_config": dict[str, object] | None}


def _on_wire(tp: object) -> object:
    if tp in _WIRE:
        return _WIRE[tp]
    if get_origin(tp) is list:
        return list[_on_wire(get_args(tp)[0])]  # type: ignore[misc]  # a list type built at run time
    return tp


def answer_fields(fields_of: type[DataclassInstance] = AnswerFields) -> dict[str, object]:
    """AnswerOut's fields: every field of `fields_of` (AnswerFields), in its order, in its wire type."""
    hints = get_type_hints(fields_of)
    return {f.name: _on_wire(hints[f.name]) for f in fields(fields_of)}


def answer_row_fields(fields_of: type[DataclassInstance] = AnswerFields,
                      columns: tuple[str, ...] = COLUMNS) -> dict[str, object]:
    """AnswerRow's fields: the log's columns in table order (a timing column as its number or null), then
    what a read adds: the flags' structured form and the feedback (AnswerLog.query())."""
    wire = answer_fields(fields_of)
    timing = {key: tp | None for f in fields(fields_of) for key, tp in logged(f).columns}
    row = {c: _ROW.get(c, wire[c]) if c in wire else timing[c] for c in columns}
    return {**row, "flag_details": wire["flag_details"], "feedback": list[dict[str, object]]}


_Row = TypeVar("_Row", bound="AnswerRow")


class _FlagParts(TypedDict):
    """gateway.answer_fields.flag_parts(flag): FlagOut's fields."""

    name: Flag
    detail: str


def _answer_out_of(cls: type[AnswerOut], data: Mapping[str, object]) -> AnswerOut:
    """From AnswerResult.to_dict(); the values are kept as they are (no copy, no conversion)."""
    citations = cast("list[dict[str, Any]]", data["citations"])  # Citation.to_dict(): CitationOut's fields
    details = cast("list[_FlagParts]", data["flag_details"])  # flag_parts()
    return cls(**{**data, "citations": [CitationOut(**c) for c in citations],
                  "flag_details": [FlagOut(**f) for f in details]})


def _answer_row_of(cls: type[_Row], row: Mapping[str, object]) -> _Row:
    """From AnswerLog.query() / get() (AnswerDetail: with its chain)."""
    details = cast("list[_FlagParts]", row["flag_details"])  # flag_parts()
    return cls(**{**row, "flag_details": [FlagOut(**f) for f in details]})


# AnswerOut and AnswerRow get their fields at run time, from the declaration (answer_fields(),
# answer_row_fields()), through msgspec.defstruct: the documented way to give a Struct fields that are
# not written out (assigning __annotations__ in a class body is not one: Python 3.14 stores a class's
# annotations lazily, PEP 649/749). mypy reads the class statements below instead: the same names,
# bases and `of`, so that routes and other Structs (AnswerDetail, AnswerPage, TrialOut) name them as types.
_ANSWER_OUT_DOC = "One answer as POST /api/v1/ask returns it: gateway.answer.pipeline.AnswerResult.to_dict()."
_ANSWER_ROW_DOC = """One row of the answer log as AnswerLog.query() gives it: the `answers` columns in table order
    (JSON columns decoded), then its flags structured and its feedback."""

if TYPE_CHECKING:
    class AnswerOut(msgspec.Struct):
        @classmethod
        def of(cls, data: Mapping[str, object]) -> AnswerOut: ...

    class AnswerRow(msgspec.Struct):
        @classmethod
        def of(cls: type[_Row], row: Mapping[str, object]) -> _Row: ...
else:
    AnswerOut = msgspec.defstruct("AnswerOut", list(answer_fields().items()), module=__name__, namespace={
        "__doc__": _ANSWER_OUT_DOC, "of": classmethod(_answer_out_of)})
    AnswerRow = msgspec.defstruct("AnswerRow", list(answer_row_fields().items()), module=__name__, namespace={
        "__doc__": _ANSWER_ROW_DOC, "of": classmethod(_answer_row_of)})


class AnswerDetail(AnswerRow):
    """One logged answer with its artifact chain (provenance)."""

    chain: dict[str, object] | None


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
    hits: list[dict[str, object]]
