"""An answer as a row of the log: its columns, derived from the one declaration of an answer's fields.

gateway.answer_fields.AnswerFields declares the fields; the migrations (gateway.records.db) make the
columns. `answer_columns` derives the log's lists from the one and checks them against the other at
import, so a field added without its migration (or a column without its field) stops the gateway at
start, not at the first answer logged. Also the `since` filter, and LogError.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

# OUTCOMES, CLIENTS and flag_parts: also read from here by older callers (tests)
from gateway.answer_fields import CLIENTS as CLIENTS
from gateway.answer_fields import OUTCOMES as OUTCOMES
from gateway.answer_fields import AnswerFields, logged
from gateway.answer_fields import flag_parts as flag_parts
from gateway.errors import GatewayError
from gateway.records.db import migrated_columns, utcnow

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class LogError(GatewayError):
    """A log query or feedback that cannot be served (bad filter, unknown answer)."""


class AnswerColumns(NamedTuple):
    """The `answers` table as an answer's fields make it, each list in table order."""

    columns: tuple[str, ...]  # every column, in the migrations' order (what SELECT * reads)
    json: tuple[str, ...]  # the fields that are a list or a dict, stored as JSON text
    timing: tuple[str, ...]  # keys of `timings` that also have a column each (Logged.columns)


def answer_columns(fields_of: type[DataclassInstance] = AnswerFields,
                   migrations: list[tuple[str, list[str]]] | None = None) -> AnswerColumns:
    """The log's columns from `fields_of`'s fields (default: AnswerFields) and the `answers` table that
    `migrations` make (default: MIGRATIONS); RuntimeError naming what one has and the other lacks."""
    hints = typing.get_type_hints(fields_of)
    declared: dict[str, bool] = {}  # column -> a JSON column
    for spec in dataclasses.fields(fields_of):
        how = logged(spec)
        if how.stored:
            declared[spec.name] = typing.get_origin(hints[spec.name]) in (list, dict)
        declared.update((key, False) for key, _ in how.columns)
    table = migrated_columns("answers", migrations)
    if set(table) != set(declared):
        raise RuntimeError("the answer log's columns and the answer's fields disagree: columns without a field "
                           f"{sorted(set(table) - set(declared))}, fields without a column (a migration in "
                           f"gateway.records.db) {sorted(set(declared) - set(table))}")
    timing = {key for spec in dataclasses.fields(fields_of) for key, _ in logged(spec).columns}
    return AnswerColumns(tuple(table), tuple(c for c in table if declared[c]), tuple(c for c in table if c in timing))


COLUMNS, JSON_COLUMNS, TIMING_COLUMNS = answer_columns()


class _AsDict(Protocol):
    """An answer (gateway.answer.result.AnswerResult; the records never import the answer core)."""

    def to_dict(self) -> Mapping[str, object]: ...


AnswerLike = _AsDict | Mapping[str, object]  # what the log records: an AnswerResult, or its dict


def _compact_passage(p: Mapping[str, object]) -> dict[str, object]:
    keep = ("chunk_id", "manual", "manual_sha256", "page", "score", "dense_score", "dense_rank",
            "lexical_rank", "given")
    return {k: p.get(k) for k in keep if k in p}


def to_row(result: AnswerLike) -> dict[str, object]:
    """An AnswerResult (or its dict) as an `answers` row: JSON columns encoded, passages compacted."""
    data = result if isinstance(result, Mapping) else result.to_dict()
    timings = dict(cast("Mapping[str, object]", data.get("timings") or {}))
    passages = cast("list[Mapping[str, object]]", data.get("passages") or [])  # Hit.to_dict() (+ n, given)
    row: dict[str, object] = {c: data.get(c) for c in COLUMNS if c not in TIMING_COLUMNS}
    row["passages"] = [_compact_passage(p) for p in passages]
    row["timings"] = timings
    for c in TIMING_COLUMNS:
        row[c] = timings.get(c)
    for c in JSON_COLUMNS:
        row[c] = json.dumps(row[c] if row[c] is not None else ([] if c != "generation_config" else {}),
                            ensure_ascii=False, default=str)
    row["time"] = row["time"] or utcnow()
    row["answer"] = row["answer"] or ""
    row["draft"] = row["draft"] or ""
    return row


def from_row(row: Mapping[str, object]) -> dict[str, object]:
    out = dict(row)
    for c in JSON_COLUMNS:
        value = out.get(c)
        if isinstance(value, str):
            out[c] = json.loads(value)
    return out


_SINCE_RE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")


def parse_since(since: str | datetime | None) -> str | None:
    """'1h', '2d', '30m', an ISO date/time or a datetime -> ISO UTC string comparable with `time`."""
    if since is None or since == "":
        return None
    if isinstance(since, datetime):
        dt = since
    else:
        m = _SINCE_RE.match(since)
        if m:
            unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[m.group(2)]
            try:
                dt = datetime.now(timezone.utc) - timedelta(**{unit: int(m.group(1))})
            except (OverflowError, ValueError):
                raise LogError(f"since: {since!r} reaches back before the year 1") from None
        else:
            try:
                dt = datetime.fromisoformat(since.strip().replace("Z", "+00:00"))
            except ValueError as exc:
                raise LogError(f"since: {since!r} is neither an ISO date/time nor like 30m, 1h, 2d") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
