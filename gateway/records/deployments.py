"""The last `manualqa doctor` verdicts, kept per profile so the server and admin page can show them.

Gates are run by a person or a rollout script (they load the model and answer a smoke prompt), not
by the server at start-up; the server shows the latest record and when it was made.
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


def save_doctor_report(data_dir: Path, report: dict[str, Any]) -> Path:
    name = str((report.get("profile") or {}).get("name") or report.get("profile_name") or "profile")
    path = _path(data_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"checked_at": utcnow(), "report": report}
    atomic_write_bytes(path, json.dumps(record, indent=2, default=str).encode("utf-8"))
    return path


def last_doctor_report(data_dir: Path, profile_name: str) -> dict[str, Any] | None:
    path = _path(data_dir, profile_name)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
