"""The last `manualqa doctor` verdicts, kept per profile so the server and admin page can show them.

Gates are run by a person, a rollout script or the admin page's "Run doctor" (they load the model
and answer a smoke prompt), not by the server at start-up; the server shows the latest record and
when it was made. `run_and_record` is what `manualqa doctor` and POST /api/v1/deployment/doctor do.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from gateway.records.db import utcnow
from retrieval.pointer import atomic_write_bytes


class DoctorRun(NamedTuple):
    report: Any  # runtimes.gates.DoctorReport
    checked_at: str
    warning: str | None  # why the verdict could not be recorded (the report itself stands)


def _path(data_dir: Path, profile_name: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", profile_name)[:100] or "profile"
    return data_dir / "doctor" / f"{safe}.json"


def save_doctor_report(data_dir: Path, report: dict[str, Any], checked_at: str | None = None,
                       retrieval: dict[str, Any] | None = None) -> Path:
    name = str((report.get("profile") or {}).get("name") or report.get("profile_name") or "profile")
    path = _path(data_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"checked_at": checked_at or utcnow(), "report": report}
    if retrieval is not None:  # the embedder and reranker that answers are searched with
        record["retrieval"] = retrieval
    atomic_write_bytes(path, json.dumps(record, indent=2, default=str).encode("utf-8"))
    return path


def last_doctor_report(data_dir: Path, profile_name: str) -> dict[str, Any] | None:
    path = _path(data_dir, profile_name)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_and_record(data_dir: Path, profile: Any, embedding_model: str | None = None,
                   retrieval: dict[str, Any] | None = None) -> DoctorRun:
    """Run the three gates on `profile` and keep the verdict for /api/v1/deployment and the admin page.

    Takes as long as loading the model (twice with a rollback profile) and a smoke prompt; failing
    gates are a verdict, not an error. A verdict that cannot be written is reported in `warning`.
    `embedding_model`: the one this gateway embeds with (settings.embedding.model); the record
    names it, and the profile's own declaration beside it where the two differ. `retrieval`: the
    embedder's and reranker's ids and hashes (Services.retrieval_facts), kept with the verdict.
    """
    from runtimes.gates import run_doctor

    report = run_doctor(profile)
    if embedding_model and embedding_model != report.embedding_model:
        report.embedding_model = f"{embedding_model} (the profile declares {report.embedding_model})"
    checked_at = utcnow()
    try:
        save_doctor_report(Path(data_dir), report.to_dict(), checked_at, retrieval)
    except OSError as exc:
        return DoctorRun(report, checked_at, f"could not record the doctor report: {exc}")
    return DoctorRun(report, checked_at, None)
