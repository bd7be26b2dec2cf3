"""The last `manualqa doctor` verdicts, kept per profile so the server and admin page can show them.

Gates are run by a person, a rollout script or the admin page's "Run doctor" (they load the model
and answer a smoke prompt), not by the server at start-up; the server shows the latest record and
when it was made. This module stores and reads the records under data/doctor/; running the gates and
keeping their verdict is gateway.qualification.doctor.run_and_record.

Gate 4's verdict (a replay: minutes, not seconds) is also kept on its own, per profile, with the
profile's content hash: a later doctor run that skips gate 4 reports the verdict it measured last
(and when), and `qualification()` tells the gateway whether this exact profile earned generate mode.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gateway.records.db import utcnow
from retrieval.pointer import atomic_write_bytes


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


def _qualification_path(data_dir: Path, profile_name: str, profile_sha256: str) -> Path:
    """One verdict per profile text: switching back to a profile keeps what it earned."""
    sha = re.sub(r"[^0-9a-f]", "", str(profile_sha256).lower())[:16] or "unknown"
    return _path(data_dir, profile_name).with_suffix(f".{sha}.answers.json")


def save_qualification(data_dir: Path, report: dict[str, Any], checked_at: str) -> Path | None:
    """Keep gate 4's verdict when it ran (pass or fail); a skipped gate leaves the last one in place."""
    gate = next((g for g in report.get("gates") or [] if g.get("gate") == 4), None)
    if gate is None or gate.get("status") not in ("pass", "fail"):
        return None
    profile = report.get("profile") or {}
    path = _qualification_path(data_dir, str(profile.get("name") or "profile"), str(profile.get("content_sha256")))
    record = {"checked_at": checked_at, "profile": profile.get("name"),
              "profile_sha256": profile.get("content_sha256"), "chain_id": report.get("chain_id"), "gate": gate}
    atomic_write_bytes(path, json.dumps(record, indent=2, default=str).encode("utf-8"))
    return path


def qualification(data_dir: Path, profile_name: str, profile_sha256: str) -> dict[str, Any] | None:
    """The last gate 4 verdict of exactly this profile (same content hash), or None: never measured."""
    try:
        record = json.loads(_qualification_path(data_dir, profile_name, profile_sha256).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("profile_sha256") != profile_sha256:
        return None  # the profile changed since: its model, config or bar were not measured
    return record


def last_doctor_report(data_dir: Path, profile_name: str) -> dict[str, Any] | None:
    path = _path(data_dir, profile_name)
    try:
        report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return report
    except (OSError, ValueError):
        return None
