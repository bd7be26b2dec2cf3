"""What technicians ask that the manuals do not answer (issue 48, item 9): the admin's "unanswered" view.

A question counts when its answer ended `not_found`, when its evidence was voted not helpful
(`evidence_only` or `answered` with a current thumbs-down), or when the same asker asked it again
(a near-identical question within REASK_WINDOW_S: the first answer did not help). Asker = the
log's client and API key name; anonymous technicians on the page share one asker, so two of them
asking alike within the window also count as a repeat (the log records no person).

Only technicians' clients count (the page, the JSON API, /v1); replay, bench and `manualqa ask` are
the administrator's own runs. Tried questions on an inactive version are never logged.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from gateway.records.answer_rows import parse_since
from gateway.records.db import opened
from gateway.records.question_groups import SIMILAR, QuestionVectors, group_by_similarity, group_by_text

TECHNICIAN_CLIENTS = ("web", "api", "openai")
REASK_WINDOW_S = 600.0  # a repeat within ten minutes is the same need, not a new question
MAX_ROWS = 5000  # newest rows read per view (a month of a busy site)
MAX_SHOWN = 5  # passages listed per group
# (version, chunk ids) -> {chunk_id: (heading, text)}: the text of passages the log keeps by id only
PassageText = Callable[[str, list[str]], dict[str, tuple[str, str]]]


class Shown(TypedDict):
    """A passage the technicians were shown, with its text (gateway.web.responses_admin's UnansweredView)."""

    chunk_id: object
    manual: object
    title: object
    page: object
    heading: object
    text: object
    pdf_url: object


class ManualCount(TypedDict):
    sha256: str | None
    manual: str | None
    title: str | None
    count: int


class GroupQuestion(TypedDict):
    id: str
    time: str
    question: str
    outcome: str
    client: str
    reasons: list[str]


class Group(TypedDict):
    """Questions alike in meaning (or text), latest first, with what was shown for them."""

    question: str
    count: int
    reasons: dict[str, int]
    first: str
    last: str
    manuals: list[ManualCount]
    weeks: list[str]
    questions: list[GroupQuestion]
    passages: list[Shown]


@dataclass
class Asked:
    """One logged question of the view, with why it counts."""

    id: str
    time: str
    question: str
    outcome: str
    client: str
    key_name: str | None
    index_version: str | None
    citations: list[dict[str, object]]  # as logged: gateway.answer.citations.Citation.to_dict()
    passages: list[dict[str, object]]  # as logged: compacted hits
    unhelpful: bool
    reasons: list[str] = field(default_factory=list)

    @property
    def manual(self) -> tuple[str, str]:
        """(sha256, file name) of the first cited manual, else of the closest passage; ("", "") if none."""
        for p in [*self.citations, *self.passages]:
            if p.get("manual_sha256"):
                return str(p["manual_sha256"]), str(p.get("manual") or "")
        return "", ""

    @property
    def week(self) -> str:
        return iso_week(self.time)


def iso_week(time: str) -> str:
    """'2026-12-06T07:55:54.000Z' -> '2026-W49' (ISO 8601 week of the UTC time)."""
    year, week, _ = datetime.fromisoformat(time.replace("Z", "+00:00")).isocalendar()
    return f"{year}-W{week:02d}"


def _seconds(time: str) -> float:
    return datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp()


def read_rows(db_path: str | Path, since: str | None, clients: tuple[str, ...]) -> list[Asked]:
    """Technicians' questions since `since`, oldest first, at most MAX_ROWS of the newest."""
    iso = parse_since(since) or ""
    marks = ", ".join("?" for _ in clients)
    sql = (f"SELECT a.id, a.time, a.question, a.outcome, a.client, a.key_name, a.index_version, a.citations,"
           f" a.passages, EXISTS(SELECT 1 FROM feedback f WHERE f.answer_id = a.id AND f.thumbs = -1) AS unhelpful"
           f" FROM answers a WHERE a.time >= ? AND a.client IN ({marks}) ORDER BY a.id DESC LIMIT ?")
    with opened(db_path) as db:
        rows = db.conn.execute(sql, [iso, *clients, MAX_ROWS]).fetchall()
    out = [Asked(id=r[0], time=r[1], question=r[2], outcome=r[3], client=r[4], key_name=r[5], index_version=r[6],
                 citations=json.loads(r[7] or "[]"), passages=json.loads(r[8] or "[]"), unhelpful=bool(r[9]))
           for r in rows]
    out.reverse()
    return out


def mark_reasons(rows: list[Asked], vectors: QuestionVectors | None) -> None:
    """Fill each row's reasons; a repeat marks the earlier question (its answer did not serve)."""
    for r in rows:
        if r.outcome == "not_found":
            r.reasons.append("not_found")
        if r.unhelpful and r.outcome in ("evidence_only", "answered"):
            r.reasons.append("not_helpful")
    pairs: list[tuple[int, int]] = []
    last: dict[tuple[str, str | None], int] = {}
    for j, r in enumerate(rows):
        if r.outcome in ("error", "cancelled"):
            continue
        asker = (r.client, r.key_name)
        i = last.get(asker)
        if i is not None and _seconds(r.time) - _seconds(rows[i].time) <= REASK_WINDOW_S:
            pairs.append((i, j))
        last[asker] = j
    if not pairs:
        return
    texts = [rows[k].question for pair in pairs for k in pair]
    if vectors is not None:
        v = vectors.of(texts)
        similar = [float(v[2 * n] @ v[2 * n + 1]) >= SIMILAR for n in range(len(pairs))]
    else:
        from gateway.records.question_groups import normalized

        similar = [normalized(texts[2 * n]) == normalized(texts[2 * n + 1]) for n in range(len(pairs))]
    for (i, _), same in zip(pairs, similar, strict=True):
        if same and "asked_again" not in rows[i].reasons:
            rows[i].reasons.append("asked_again")


def _strs(value: object) -> list[str]:
    return [str(x) for x in value] if isinstance(value, list) else []


def _shown(members: list[Asked], passage_text: PassageText | None, titles: dict[str, str]) -> list[Shown]:
    """The passages the technicians were shown: cited ones first (with their quoted sentences), then
    the nearest passages of not-found answers (their text read from the version that answered)."""
    shown: dict[object, Shown] = {}
    for r in members:
        for c in r.citations:
            if len(shown) < MAX_SHOWN and c.get("chunk_id") not in shown:
                shown[c["chunk_id"]] = {"chunk_id": c["chunk_id"], "manual": c.get("manual"),
                                        "title": c.get("title") or c.get("manual"), "page": c.get("page"),
                                        "heading": c.get("heading") or "",
                                        "text": " ".join(_strs(c.get("sentences"))) or c.get("passage") or "",
                                        "pdf_url": c.get("pdf_url") or ""}
    for r in members:  # an answer without citations (not found) listed its closest passages instead
        near = [] if r.citations else [p for p in r.passages[:2] if p.get("chunk_id") not in shown]
        if not near or len(shown) >= MAX_SHOWN:
            continue
        texts = passage_text(r.index_version or "", [str(p["chunk_id"]) for p in near]) if passage_text else {}
        for p in near[: MAX_SHOWN - len(shown)]:
            heading, text = texts.get(str(p["chunk_id"]), ("", ""))
            title = titles.get(str(p.get("manual_sha256"))) or p.get("manual")
            shown[p["chunk_id"]] = {"chunk_id": p["chunk_id"], "manual": p.get("manual"), "title": title,
                                    "page": p.get("page"), "heading": heading, "text": text,
                                    "pdf_url": f"/api/v1/manuals/{p.get('manual_sha256')}/file#page={p.get('page')}"}
    return list(shown.values())


def unanswered_view(db_path: str | Path, *, vectors: QuestionVectors | None, since: str | None = "8w",
                    manual: str | None = None, week: str | None = None,
                    clients: tuple[str, ...] = TECHNICIAN_CLIENTS, limit: int = 50,
                    passage_text: PassageText | None = None,
                    titles: dict[str, str] | None = None) -> dict[str, object]:
    """The view: counts per manual and per ISO week, and the questions grouped by meaning (largest first).

    `manual` (a sha256 or its prefix, or a file name) and `week` ("2026-W49") narrow the groups; the
    per-manual and per-week counts are of the whole window, so the admin sees where to narrow.
    """
    rows = read_rows(db_path, since, clients)
    mark_reasons(rows, vectors)
    counted = [r for r in rows if r.reasons]
    titles = titles or {}
    by_manual: Counter[tuple[str, str]] = Counter(r.manual for r in counted)
    by_week: Counter[str] = Counter(r.week for r in counted)
    wanted = [r for r in counted if (not week or r.week == week)
              and (not manual or (r.manual[0] and (r.manual[0].startswith(manual.lower()) or r.manual[1] == manual)))]
    texts = [r.question for r in wanted]
    if vectors is not None and wanted:
        indices = group_by_similarity(vectors.of(texts))
    else:
        indices = group_by_text(texts)
    groups: list[Group] = []
    for members in ([wanted[i] for i in g] for g in indices):
        latest = members[-1]
        reasons: Counter[str] = Counter(x for r in members for x in r.reasons)
        manuals: Counter[tuple[str, str]] = Counter(r.manual for r in members)
        groups.append({
            "question": latest.question, "count": len(members), "reasons": dict(reasons),
            "first": members[0].time, "last": latest.time,
            "manuals": [_manual_row(m, n, titles) for m, n in manuals.most_common()],
            "weeks": sorted({r.week for r in members}),
            "questions": [{"id": r.id, "time": r.time, "question": r.question, "outcome": r.outcome,
                           "client": r.client, "reasons": r.reasons} for r in reversed(members)],
            "passages": _shown(list(reversed(members)), passage_text, titles)})
    groups.sort(key=lambda g: (g["count"], g["last"]), reverse=True)  # largest, then latest
    return {"since": parse_since(since), "questions": len(counted), "matching": len(wanted),
            "grouped_by": "embedding" if vectors is not None else "text", "similarity": SIMILAR,
            "reask_window_s": REASK_WINDOW_S, "clients": list(clients),
            "by_manual": [_manual_row(m, n, titles) for m, n in by_manual.most_common()],
            "by_week": [{"week": w, "count": n} for w, n in sorted(by_week.items(), reverse=True)],
            "groups": groups[:limit], "more_groups": max(0, len(groups) - limit)}


def _manual_row(manual: tuple[str, str], count: int, titles: dict[str, str]) -> ManualCount:
    sha, name = manual
    return {"sha256": sha or None, "manual": name or None, "title": titles.get(sha) or name or None, "count": count}

