"""An answer as a row of the log: its columns, the outcome and client names, and the `since` filter.

The one list of outcome and client names lives here; the pipeline, metrics, CLI and web take them
from this module, and `AnswerLog` (gateway.records.answers) refuses a row with any other.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, get_args

from gateway.errors import GatewayError
from gateway.records.db import utcnow

JSON_COLUMNS = ("scope", "flags", "citations", "passages", "generation_config", "timings", "support")
TIMING_COLUMNS = ("retrieval_ms", "embed_ms", "ttft_ms", "total_ms", "prompt_tokens", "output_tokens",
                  "decode_tps")
COLUMNS = ("id", "time", "question", "scope", "answer", "outcome", "mode", "flags", "citations",
           "passages", "index_version", "chain_id", "profile", "generation_config", *TIMING_COLUMNS,
           "timings", "client", "key_name", "error", "draft", "support")
# answered: every sentence shown is backed by the passage it cites; evidence_only: quoted evidence
# is shown instead of an answer (extractive mode, or the model's text was not supported);
# not_found: the evidence was too weak to show as an answer. The one list of outcome names: the
# pipeline, metrics, CLI and web take them from here (ui/templates/admin.html is checked against it).
Outcome = Literal["answered", "evidence_only", "not_found", "error", "cancelled"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
# Who asked: web (the technician page), api (the JSON API, any other tool), openai (/v1), cli
# (`manualqa ask`), replay (`manualqa replay`), bench (`manualqa bench`). The one list of client
# names: the web routes, the CLI's `log --client` and record() (it refuses any other) take them from here.
Client = Literal["web", "api", "openai", "cli", "replay", "bench"]
CLIENTS: tuple[Client, ...] = get_args(Client)


class LogError(GatewayError):
    """A log query or feedback that cannot be served (bad filter, unknown answer)."""


def _compact_passage(p: dict[str, Any]) -> dict[str, Any]:
    keep = ("chunk_id", "manual", "manual_sha256", "page", "score", "dense_score", "dense_rank",
            "lexical_rank", "given")
    return {k: p.get(k) for k in keep if k in p}


def to_row(result: Any) -> dict[str, Any]:
    """An AnswerResult (or its dict) as an `answers` row: JSON columns encoded, passages compacted."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    timings = dict(data.get("timings") or {})
    row: dict[str, Any] = {c: data.get(c) for c in COLUMNS if c not in TIMING_COLUMNS}
    row["passages"] = [_compact_passage(p) for p in data.get("passages") or []]
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


def flag_parts(flag: str) -> dict[str, str]:
    """A logged flag as {"name", "detail"}: the log holds each flag as its text, "name" or "name: detail"
    (gateway.answer.flags renders it), and the API gives both forms (docs/api.md, `flag_details`)."""
    name, _, detail = flag.partition(": ")
    return {"name": name, "detail": detail}


def from_row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for c in JSON_COLUMNS:
        if isinstance(out.get(c), str):
            out[c] = json.loads(out[c])
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
