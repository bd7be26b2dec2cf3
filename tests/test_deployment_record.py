"""The last doctor verdicts are kept per profile and shown by /api/v1/deployment's record."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

from gateway.config import Settings
from gateway.qualification.answer_mode import ModeDecision
from gateway.records.deployments import last_doctor_report, save_doctor_report
from gateway.runtime_owner import RuntimeOwner
from gateway.web.routes_system import deployment_record


def _report(name: str, passed: bool) -> dict:
    return {"profile": {"name": name}, "passed": passed, "chain_id": "abc123",
            "gates": [{"gate": 1, "passed": True, "detail": "loads"},
                      {"gate": 2, "passed": passed, "detail": "silent CPU fallback" if not passed else "ok"}]}


def test_saved_per_profile_and_latest_wins(tmp_path: Path) -> None:
    save_doctor_report(tmp_path, _report("gpu/../x", True))
    save_doctor_report(tmp_path, _report("gpu/../x", False))
    save_doctor_report(tmp_path, _report("cpu", True))
    assert last_doctor_report(tmp_path, "gpu/../x")["report"]["passed"] is False
    assert last_doctor_report(tmp_path, "cpu")["report"]["passed"] is True
    assert last_doctor_report(tmp_path, "never-checked") is None
    assert all(p.parent == tmp_path / "doctor" for p in (tmp_path / "doctor").iterdir())  # no traversal


def test_deployment_record_shows_the_active_profiles_gates(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    profile = SimpleNamespace(name="cpu", to_dict=lambda: {"name": "cpu", "backend": "llamacpp"})
    mode = ModeDecision("extractive", "auto", "profile 'cpu' has not been qualified for generate mode")
    gw = SimpleNamespace(settings=settings, profile=profile, runtime_if_loaded=lambda: None, answer_mode=lambda: mode,
                         store=SimpleNamespace(active_id=lambda: "v1"), runtimes=RuntimeOwner(lambda: profile))
    ready = threading.Event()
    state = SimpleNamespace(gw=gw, ready=ready, load_error=None)
    assert deployment_record(state)["gates"] is None
    save_doctor_report(tmp_path, _report("cpu", False))
    record = deployment_record(state)
    assert record["index_version"] == "v1"
    assert record["answer_mode"] == "extractive" and record["answer_mode_configured"] == "auto"
    assert "not been qualified" in record["answer_mode_reason"]
    assert record["gates"]["passed"] is False
    assert [g["gate"] for g in record["gates"]["gates"]] == [1, 2]
