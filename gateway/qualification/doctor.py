"""`manualqa doctor` run and recorded: the gates on a profile, then their verdict kept per profile.

`run_and_record` is what `manualqa doctor` and POST /api/v1/deployment/doctor do. The records
themselves (the last report, and gate 4's verdict per profile text) are stored and read by
gateway.records.deployments.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gateway.records.db import utcnow
from gateway.records.deployments import qualification, save_doctor_report, save_qualification

if TYPE_CHECKING:
    from gateway.qualification.gates import AnswersGate
    from gateway.qualification.verdicts import DoctorReport
    from runtimes.profiles import Profile


class DoctorRun(NamedTuple):
    report: DoctorReport
    checked_at: str
    warning: str | None  # why the verdict could not be recorded (the report itself stands)


def _carry_qualification(data_dir: Path, report: DoctorReport) -> None:
    """A run that skipped gate 4 shows the verdict measured last for this profile, saying when."""
    for i, gate in enumerate(report.gates):
        if gate.gate != 4 or gate.status != "skipped":
            continue
        last = qualification(data_dir, str(report.profile.get("name", "")),
                             str(report.profile.get("content_sha256", "")))
        before = last.get("gate") if last is not None else None
        # save_qualification keeps only a gate that passed or failed
        if last is not None and isinstance(before, dict) and (status := before.get("status")) in ("pass", "fail"):
            measured = before.get("evidence", {})
            evidence: dict[str, object] = {**(measured if isinstance(measured, dict) else {}),
                                           "measured_at": last["checked_at"]}
            report.gates[i] = dataclasses.replace(
                gate, status="pass" if status == "pass" else "fail", evidence=evidence,
                detail=f"{before['detail']} [measured {last['checked_at']}, not rerun]")


def run_and_record(data_dir: Path, profile: Profile, embedding_model: str | None = None,
                   retrieval: dict[str, object] | None = None, answers: AnswersGate | None = None) -> DoctorRun:
    """Run the three gates on `profile` and keep the verdict for /api/v1/deployment and the admin page.

    Takes as long as loading the model (twice with a rollback profile) and a smoke prompt; failing
    gates are a verdict, not an error. A verdict that cannot be written is reported in `warning`.
    `embedding_model`: the one this gateway embeds with (settings.embedding.model); the record
    names it, and the profile's own declaration beside it where the two differ. `retrieval`: the
    embedder's and reranker's ids and hashes (Services.retrieval_facts), kept with the verdict.
    `answers`: gate 4 (gateway.qualification.answers_gate); without it the last measured verdict is shown.
    """
    from gateway.qualification.gates import run_doctor

    report = run_doctor(profile, answers=answers)
    _carry_qualification(Path(data_dir), report)
    if embedding_model and embedding_model != report.embedding_model:
        report.embedding_model = f"{embedding_model} (the profile declares {report.embedding_model})"
    checked_at = utcnow()
    try:
        save_doctor_report(Path(data_dir), report.to_dict(), checked_at, retrieval)
        save_qualification(Path(data_dir), report.to_dict(), checked_at)
    except OSError as exc:
        return DoctorRun(report, checked_at, f"could not record the doctor report: {exc}")
    return DoctorRun(report, checked_at, None)
