"""Which answers a log query, count or export covers: one filter, checked once, turned into SQL once.

The list (GET /api/v1/answers), its total, the download and `manualqa log` all take their WHERE
clause from here, so the page of rows, the "of N" beside it and the file an admin downloads always
mean the same answers. A value that cannot be used raises LogError (HTTP 400) before any row is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from gateway.answer_fields import CLIENTS, OUTCOMES
from gateway.records.answer_rows import LogError, parse_since

_MANUAL_RE = re.compile(r"^[0-9a-f]{8,64}$")


def _names(value: str | None, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    """'web,api' -> ('web', 'api'); an empty value means any; an unknown name is refused."""
    names = tuple(dict.fromkeys(v.strip() for v in (value or "").split(",") if v.strip()))
    for name in names:
        if name not in allowed:
            raise LogError(f"{what} must be one of {', '.join(allowed)} (or several, comma-separated), not {name!r}")
    return names


def _time(value: str | datetime | None, name: str) -> str | None:
    """parse_since, its error naming the parameter it came from."""
    try:
        return parse_since(value)
    except LogError as exc:
        raise LogError(str(exc).replace("since:", f"{name}:", 1)) from None


@dataclass(frozen=True)
class LogFilter:
    """since / until: an ISO date/time or an age (30m, 12h, 7d); since inclusive, until exclusive.
    outcome / client: one name or several, comma-separated. manual: a manual's sha256 (or its first
    8+ hex digits): the answers that cited or retrieved a passage of it."""

    since: str | datetime | None = None
    until: str | datetime | None = None
    outcome: str | None = None
    client: str | None = None
    manual: str | None = None

    def where(self) -> tuple[str, list[object]]:
        """(" WHERE ...", params) over the answers table, or ("", []) for no filter."""
        clauses: list[str] = []
        params: list[object] = []
        since, until = _time(self.since, "since"), _time(self.until, "until")
        if since:
            clauses.append("time >= ?")
            params.append(since)
        if until:
            if since and until <= since:
                raise LogError(f"until ({self.until}) must come after since ({self.since})")
            clauses.append("time < ?")
            params.append(until)
        for column, value, allowed in (("outcome", self.outcome, OUTCOMES), ("client", self.client, CLIENTS)):
            names = _names(value, allowed, column)
            if names:
                clauses.append(f"{column} IN ({', '.join('?' for _ in names)})")
                params.extend(names)
        if self.manual:
            manual = self.manual.strip().lower()
            if not _MANUAL_RE.match(manual):
                raise LogError(f"manual must be a manual's sha256 or its first 8 or more hex digits, "
                               f"not {self.manual!r}")
            # cited, or among the passages retrieved for it (a not-found answer cites nothing)
            clauses.append("(EXISTS (SELECT 1 FROM json_each(answers.citations) c"
                           " WHERE substr(json_extract(c.value, '$.manual_sha256'), 1, ?) = ?)"
                           " OR EXISTS (SELECT 1 FROM json_each(answers.passages) p"
                           " WHERE substr(json_extract(p.value, '$.manual_sha256'), 1, ?) = ?))")
            params.extend([len(manual), manual, len(manual), manual])
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params
