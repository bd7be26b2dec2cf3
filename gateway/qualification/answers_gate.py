"""Doctor's gate 4, "answers": does this profile's model earn the green badge on a gold question set?

A replay (gateway.qa.replay) of the set through the whole pipeline, generate mode, on the profile
being checked and the gateway's active index, held to the profile's bar (runtimes.answer_bar). The
run is kept in gateway.db like any replay, so `manualqa replay show RUN` explains the verdict
question by question. The set must be about manuals the index holds: questions on a manual that
is not there would fail the model for the index's sake, so the gate refuses to judge instead.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config import Settings
from gateway.qa.metrics import Question, RunMetrics, figure
from gateway.qa.replay import load_questions, local_answerer, run_replay
from gateway.qualification.gates import AnswersGate
from gateway.qualification.verdicts import GateResult
from runtimes.profiles import Profile

if TYPE_CHECKING:
    from gateway.services import Services

# Figures of the replay kept with the verdict (the bar's own names, and what explains them).
KEPT = ("questions", "answerable", "unanswerable", "outcomes", "answered_precision", "green_rate",
        "false_answer_rate", "unanswerable_not_found_rate", "answer_correctness", "citation_precision",
        "error_rate", "ttft_ms_p50", "total_ms_p50", "total_ms_p95")


def _missing_manuals(gw: Services, questions: list[Question]) -> list[str]:
    """Manuals the questions name that the active index does not hold (by file name, title or sha)."""
    from retrieval.scope import resolve_manuals
    from retrieval.types import RetrievalError

    known = gw.store.open().chunks.manuals()
    missing = []
    for name in sorted({str(q["manual"]) for q in questions if q.get("manual")}):
        try:
            resolve_manuals(known, [name])
        except RetrievalError:
            missing.append(name)
    return missing


def _figures(m: RunMetrics, run_id: str) -> str:
    def share(key: str) -> str:
        value = m.get(key)
        return "-" if value is None else f"{value:.2f}"

    p95 = figure(m, "total_ms_p95")
    return (f"answered precision {share('answered_precision')}, green on {share('green_rate')} of answerable, "
            f"unanswerable answered {share('false_answer_rate')}, p95 "
            f"{'-' if p95 is None else f'{p95 / 1000:.1f} s'} over {m.get('questions')} questions "
            f"(manualqa replay show {run_id})")


def answers_gate(settings: Settings, questions: str | Path | None = None) -> AnswersGate:
    """Gate 4 for run_doctor: `questions` (e.g. `doctor --answers FILE`) overrides answers.questions."""

    def gate(profile: Profile) -> GateResult:
        from gateway.services import Services

        path = Path(questions) if questions else profile.answer_questions()
        if path is None:
            return GateResult(4, "skipped", "skipped: the profile names no gold question set (answers.questions)")
        qs = load_questions(path)
        if profile.answers.limit:
            qs.questions = qs.questions[: profile.answers.limit]
        own = copy.deepcopy(settings)
        own.answer = dataclasses.replace(own.answer, mode="generate")
        gw = Services(own, profile=profile)
        try:
            missing = _missing_manuals(gw, qs.questions)
            if missing:
                return GateResult(4, "not run", f"not run: the active index does not hold {', '.join(missing)}, "
                                                f"which {path.name} asks about (ingest them first)")
            run = run_replay(local_answerer(gw, mode="generate"), qs, own.db_path,
                             label=f"doctor gate 4: {profile.name}", source=str(path),
                             deployment={"profile": profile.name, "profile_sha256": profile.content_hash,
                                         "mode": "generate"})
        finally:
            gw.close()
        metrics = run["metrics"]
        shortfalls = profile.answers.shortfalls(metrics)
        figures = _figures(metrics, run["id"])
        evidence: dict[str, object] = {
            "replay_run": run["id"], "questions_file": str(path), "bar": profile.answers.to_dict(),
            "metrics": {k: metrics.get(k) for k in KEPT}, "shortfalls": shortfalls}
        if shortfalls:
            return GateResult(4, "fail", f"below the bar ({'; '.join(shortfalls)}): {figures}", evidence)
        return GateResult(4, "pass", f"clears the bar: {figures}", evidence)

    return gate
