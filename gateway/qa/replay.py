"""QA replay: run a fixed question set through the answer function and keep the run in gateway.db.

The same answer function serves the technician, so a replay measures exactly what users get:
in-process (this gateway's profile and index) or over the API of a running gateway.
"""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from gateway.errors import GatewayError
from gateway.qa.metrics import Answered, Embed, Item, PageRef, Question, RunMetrics, compute_metrics
from gateway.records.db import opened
from gateway.stamps import new_id, utcnow

if TYPE_CHECKING:
    from typing_extensions import Required

    from gateway.answer.request import Mode
    from gateway.services import Services

REQUIRED = {"id": str, "question": str}
# What a replay measured, whichever way it asked (in-process or --url): the deployment profile, the
# answer mode, the artifact chain that wrote the answers (None: no model took part, as in extractive
# mode) and the index version. `via` says where it asked ("in-process" or the gateway's URL): the same
# deployment replayed both ways has the same identity.
IDENTITY = ("profile", "mode", "chain_id", "index_version")


class ReplayError(GatewayError):
    """A replay that cannot run (no usable question, unreachable gateway, unknown run)."""


class ReplaySummary(TypedDict):
    """What run_replay returns: the stored run without its items."""

    id: str
    label: str
    deployment: dict[str, object]
    metrics: RunMetrics
    questions: int
    skipped_lines: list[str]


class StoredItem(TypedDict, total=False):
    """One question of a stored run (replay_items), as get_run reads it back."""

    position: int
    question_id: str
    answer_id: str | None
    outcome: str | None
    answer: str
    citations: list[PageRef]
    retrieved: list[PageRef]
    timings: dict[str, float | str | None]
    question: Question
    error: str | None
    mode: str | None
    flags: list[str]


class ReplayRun(TypedDict, total=False):
    """A stored run (replay_runs); get_run adds its items."""

    id: Required[str]
    label: Required[str]
    time: Required[str]
    questions_file: Required[str]
    deployment: Required[dict[str, object]]
    metrics: Required[RunMetrics]
    items: list[StoredItem]


@dataclass
class QuestionSet:
    questions: list[Question]
    problems: list[str] = field(default_factory=list)  # "line N: why", never silent


def load_questions(path: str | Path) -> QuestionSet:
    """Read the questions.jsonl format; unknown fields are kept and ignored, bad lines reported."""
    p = Path(path)
    if not p.is_file():
        raise ReplayError(f"question file not found: {p}")
    out = QuestionSet([])
    seen: set[str] = set()
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            out.problems.append(f"line {lineno}: not JSON ({exc.msg})")
            continue
        if not isinstance(row, dict):
            out.problems.append(f"line {lineno}: not a JSON object")
            continue
        missing = [k for k, t in REQUIRED.items() if not isinstance(row.get(k), t) or not row.get(k)]
        if missing:
            out.problems.append(f"line {lineno}: missing or empty {', '.join(missing)}")
            continue
        if row["id"] in seen:
            out.problems.append(f"line {lineno}: duplicate id {row['id']!r}")
            continue
        pages = row.get("pages") or []
        if not isinstance(pages, list) or not all(isinstance(x, int) for x in pages):
            out.problems.append(f"line {lineno}: pages must be a list of integers")
            continue
        seen.add(row["id"])
        row.setdefault("answerable", bool(pages))
        out.questions.append(cast(Question, row))  # checked above: id and question are non-empty text
    if not out.questions:
        raise ReplayError(f"{p}: no usable question" + (f" ({out.problems[0]})" if out.problems else ""))
    return out


Answerer = Callable[[Question], Answered]


def local_answerer(gw: Services, scope_by_manual: bool = False, mode: Mode | None = None,
                   version: str | None = None) -> Answerer:
    """Answer through this process's pipeline (client "replay"), optionally on a pinned version."""
    from gateway.answer.pipeline import answer
    from gateway.answer.request import AnswerRequest

    def run(q: Question) -> Answered:
        scope = (q["manual"],) if scope_by_manual and q.get("manual") else ()
        request = AnswerRequest(question=q["question"], scope=scope, client="replay", mode=mode, version=version)
        return cast(Answered, answer(gw.answer_deps(), request).to_dict())  # the answer's JSON, as the API's

    return run


def remote_answerer(url: str, key: str | None = None, scope_by_manual: bool = False,
                    timeout_s: float = 300.0) -> Answerer:
    """Answer through a running gateway's POST /api/v1/ask."""
    import httpx

    base = url.rstrip("/")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    client = httpx.Client(base_url=base, headers=headers, timeout=timeout_s)
    try:
        client.get("/api/v1/health").raise_for_status()
    except httpx.HTTPError as exc:
        raise ReplayError(f"gateway at {base} is not ready: {exc}") from exc

    def run(q: Question) -> Answered:
        body: dict[str, object] = {"question": q["question"]}
        if scope_by_manual and q.get("manual"):
            body["manuals"] = [q["manual"]]
        r = client.post("/api/v1/ask", json=body)
        if r.status_code >= 400:
            try:
                message = r.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = r.text[:200]
            return {"outcome": "error", "error": f"HTTP {r.status_code}: {message}", "answer": "",
                    "citations": [], "passages": [], "timings": {}}
        answered: Answered = r.json()
        return answered

    return run


def _peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / 1024 if sys.platform != "darwin" else kb / 1024 / 1024, 1)


def run_replay(
    answerer: Answerer,
    qs: QuestionSet,
    db_path: Path,
    label: str = "",
    source: str = "",
    deployment: Mapping[str, object] | None = None,
    embed: Embed | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplaySummary:
    """Answer every question, store the run and its per-question rows, return the run summary."""
    items: list[Item] = []
    for i, q in enumerate(qs.questions):
        r: Answered
        try:
            r = answerer(q)
        except Exception as exc:  # one failing question is recorded, the run goes on
            r = {"outcome": "error", "error": f"{type(exc).__name__}: {exc}", "answer": "",
                 "citations": [], "passages": [], "timings": {}}
        items.append(_item(i, q, r))
        if progress:
            progress(i + 1, len(qs.questions))
    dep = deployment_of(items, deployment)
    metrics = compute_metrics(items, embed=embed)
    metrics["peak_rss_mb"] = _peak_rss_mb()
    run_id = new_id()
    with opened(db_path) as db, db.conn:
        db.table("replay_runs").insert({"id": run_id, "label": label, "time": utcnow(), "questions_file": source,
                                  "deployment": json.dumps(dep), "metrics": json.dumps(metrics)})
        db.table("replay_items").insert_all([{
            "run_id": run_id, "position": it["position"], "question_id": it["question"]["id"],
            "answer_id": it["result"].get("id"), "outcome": it["result"].get("outcome"),
            "answer": it["result"].get("answer", ""), "citations": json.dumps(it["citations"]),
            "retrieved": json.dumps(it["retrieved"]), "timings": json.dumps(it["result"].get("timings") or {}),
            "data": json.dumps({"question": it["question"], "error": it["result"].get("error"),
                                "mode": it["result"].get("mode"), "flags": it["result"].get("flags", [])}),
        } for it in items])
    return {"id": run_id, "label": label, "deployment": dep, "metrics": metrics,
            "questions": len(items), "skipped_lines": qs.problems}


def deployment_of(items: list[Item], declared: Mapping[str, object] | None = None) -> dict[str, object]:
    """The run's deployment: IDENTITY (what the caller declared, else what the answers say), then `via`
    and anything else declared. The answers' own fields decide for both ways of asking, so an in-process
    replay and one through --url of the same deployment record the same identity."""
    declared = dict(declared or {})
    found: dict[str, object] = {}
    for key in ("profile", "chain_id", "index_version"):
        values = sorted({str(value) for it in items if (value := it["result"].get(key))})
        found[key] = (values[0] if len(values) == 1 else values) if values else None
    # an answer's mode: generate, extractive, or extractive_fallback (a generate-mode answer whose model failed)
    modes = sorted({"generate" if m == "extractive_fallback" else str(m)
                    for it in items if (m := it["result"].get("mode"))})
    found["mode"] = (modes[0] if len(modes) == 1 else modes) if modes else None
    dep = {key: declared.pop(key) if declared.get(key) is not None else found[key] for key in IDENTITY}
    dep["via"] = declared.pop("via", None) or declared.pop("url", None) or "in-process"
    return {**dep, **declared}


def identity_line(dep: Mapping[str, object]) -> str:
    """One line a person compares: "profile=x86-cpu mode=extractive chain=- index=v2026... via in-process"."""
    def shown(value: object) -> str:
        return "-" if value is None else ",".join(value) if isinstance(value, list) else str(value)

    names = {"chain_id": "chain", "index_version": "index"}
    return " ".join(f"{names.get(k, k)}={shown(dep.get(k))}" for k in IDENTITY) + f" via {shown(dep.get('via'))}"


def _item(position: int, q: Question, r: Answered) -> Item:
    cits: list[PageRef] = [{"n": c.get("n"), "manual": c.get("manual"), "page": c.get("page")}
                           for c in r.get("citations") or []]
    hits: list[PageRef] = [{"manual": p.get("manual"), "page": p.get("page"), "score": p.get("score")}
                           for p in r.get("passages") or []]
    return {"position": position, "question": q, "result": r, "citations": cits, "retrieved": hits}


def list_runs(db_path: Path) -> list[ReplayRun]:
    with opened(db_path) as db:
        rows = db.execute("select id, label, time, questions_file, deployment, metrics from replay_runs "
                          "order by id desc").fetchall()
    return [{"id": r[0], "label": r[1], "time": r[2], "questions_file": r[3],
             "deployment": json.loads(r[4]), "metrics": json.loads(r[5])} for r in rows]


def get_run(db_path: Path, run: str) -> ReplayRun:
    """A run by id, id prefix or label (the newest with that label)."""
    for r in list_runs(db_path):
        if r["id"] == run or r["label"] == run or (len(run) >= 6 and r["id"].startswith(run)):
            with opened(db_path) as db:
                rows = list(db["replay_items"].rows_where("run_id = ?", [r["id"]], order_by="position"))
            r["items"] = [cast(StoredItem, {  # the row as run_replay wrote it, its JSON columns decoded
                "position": row["position"], "question_id": row["question_id"], "answer_id": row["answer_id"],
                "outcome": row["outcome"], "answer": row["answer"],
                "citations": json.loads(row["citations"]), "retrieved": json.loads(row["retrieved"]),
                "timings": json.loads(row["timings"]), **json.loads(row["data"])})
                for row in rows]
            return r
    raise ReplayError(f"no replay run {run!r} (see `manualqa replay list`)")
