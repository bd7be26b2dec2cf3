"""answer.mode = "auto": a profile's model writes answers only once it passed doctor's gate 4 (answers).

Real sample index, real pipeline and HTTP app; the model is the scripted test double. The verdict is
made by the real gate (tests/test_answers_gate.py covers how), here only read back."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from litestar.testing import TestClient

from gateway.cli import main
from gateway.config import ConfigError, Settings, load_settings
from gateway.qualification.answer_mode import ModeDecision, decide_mode
from gateway.qualification.answers_gate import answers_gate
from gateway.qualification.doctor import run_and_record
from gateway.services import Services
from gateway.web.app import create_app
from runtimes.profiles import load_profile
from tests.test_answers_gate import RIGHT, WRONG, site_profile

QUESTION = "Is it safe to unplug a device while the printer is powered?"


@pytest.fixture()
def data(tmp_path: Path, sample_data_dir: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(sample_data_dir, target)
    return target


def test_auto_is_the_default_and_answer_mode_accepts_it(tmp_path: Path) -> None:
    assert Settings().answer.mode == "auto"
    assert load_settings(env={"MANUALQA_ANSWER__MODE": "extractive"}).answer.mode == "extractive"
    with pytest.raises(ConfigError, match="'auto', 'generate' or 'extractive'"):
        load_settings(env={"MANUALQA_ANSWER__MODE": "smart"})


def test_an_unqualified_profile_answers_extractively_and_says_why(data: Path, tmp_path: Path) -> None:
    profile = load_profile(site_profile(tmp_path, RIGHT))
    decision = decide_mode("auto", data, profile)
    assert decision.mode == "extractive" and "has not been qualified" in decision.reason
    assert "manualqa doctor --answers" in decision.reason
    gw = Services(Settings(data_dir=data), profile=profile)
    try:
        result = gw.answer(QUESTION)
    finally:
        gw.close()
    assert result.mode == "extractive" and result.outcome == "evidence_only" and not result.draft


def test_a_qualified_profile_generates_and_an_edit_of_it_is_unqualified_again(data: Path, tmp_path: Path) -> None:
    path = site_profile(tmp_path, RIGHT)
    run_and_record(data, load_profile(path), answers=answers_gate(Settings(data_dir=data)))
    profile = load_profile(path)
    decision = decide_mode("auto", data, profile)
    assert decision.mode == "generate" and "passed gate 4" in decision.reason
    assert decision.qualification is not None and decision.qualification["status"] == "pass"
    gw = Services(Settings(data_dir=data), profile=profile)
    try:
        result = gw.answer(QUESTION)
    finally:
        gw.close()
    assert result.mode == "generate" and result.outcome == "answered"
    # the same profile with another model script is another profile: not measured, not trusted
    edited = load_profile(site_profile(tmp_path, RIGHT.replace("[1]", " [1]")))
    assert decide_mode("auto", data, edited).mode == "extractive"


def test_a_profile_that_failed_gate_4_answers_extractively(data: Path, tmp_path: Path) -> None:
    path = site_profile(tmp_path, WRONG)
    run_and_record(data, load_profile(path), answers=answers_gate(Settings(data_dir=data)))
    decision = decide_mode("auto", data, load_profile(path))
    assert decision.mode == "extractive" and "failed gate 4" in decision.reason
    assert decision.qualification is not None and "below the bar" in decision.qualification["detail"]


def test_a_configured_mode_decides_regardless_of_gate_4(data: Path, tmp_path: Path) -> None:
    profile = load_profile(site_profile(tmp_path, RIGHT))
    assert decide_mode("generate", data, profile).mode == "generate"
    assert decide_mode("extractive", data, profile).mode == "extractive"
    assert decide_mode("auto", data, None, "no such profile").mode == "extractive"


def test_health_and_deployment_report_the_mode_and_the_reason(data: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=data)
    settings.runtime.profile = str(site_profile(tmp_path, RIGHT))
    with TestClient(create_app(settings, warm=False)) as client:
        health = client.get("/api/v1/health").json()
        assert health["answer_mode"] == "extractive" and "not been qualified" in health["answer_mode_reason"]
    run_and_record(data, load_profile(settings.runtime.profile), answers=answers_gate(settings))
    with TestClient(create_app(dataclasses.replace(settings), warm=False)) as client:
        health = client.get("/api/v1/health").json()
        assert health["answer_mode"] == "generate" and "passed gate 4" in health["answer_mode_reason"]


def test_a_questions_own_generate_on_an_unqualified_profile_is_a_labelled_draft_never_green(
        data: Path, tmp_path: Path) -> None:
    """Issue 48, item 2: "Explain" / `"mode": "generate"` on a profile that has not passed gate 4 ran the
    model and came back green. The model still writes, but the evidence is the answer (evidence_only)
    and its text is only the labelled draft, in the pipeline, the JSON API and /v1 alike."""
    path = site_profile(tmp_path, RIGHT)
    settings = Settings(data_dir=data)
    settings.runtime.profile = str(path)
    gw = Services(settings, profile=load_profile(path))
    try:
        result = gw.answer(QUESTION, mode="generate")
        assert result.mode == "generate" and result.outcome == "evidence_only"  # the model ran; no green
        evidence = gw.answer(QUESTION, mode="extractive").answer
        unqualified = gw.answer_mode().unqualified
    finally:
        gw.close()
    assert unqualified is not None and "not been qualified" in unqualified
    assert result.answer == evidence and result.draft.strip() == RIGHT  # the evidence leads; the text is kept
    assert any(f.startswith("unqualified_model: ") and "not been qualified" in f for f in result.flags)
    with TestClient(create_app(dataclasses.replace(settings), warm=False)) as client:
        health = client.get("/api/v1/health").json()
        assert "not been qualified" in health["model_unqualified"]
        r = client.post("/api/v1/ask", json={"question": QUESTION, "mode": "generate"}).json()
        assert r["outcome"] == "evidence_only" and r["mode"] == "generate" and r["draft"].strip() == RIGHT
        assert any(f.startswith("unqualified_model") for f in r["flags"])
        chat = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}]}).json()
        assert chat["manualqa"]["outcome"] != "answered"

    # Once gate 4 passed, the same per-question generate earns green, also beside a pinned extractive default.
    run_and_record(data, load_profile(path), answers=answers_gate(settings))
    for configured in ("auto", "extractive"):
        settings.answer.mode = configured
        gw = Services(settings, profile=load_profile(path))
        try:
            assert gw.answer_mode().unqualified is None
            assert gw.answer(QUESTION, mode="generate").outcome == "answered"
        finally:
            gw.close()


def test_a_failed_verdict_makes_drafts_and_a_pinned_generate_is_the_admins_trust() -> None:
    failed = {"status": "fail", "checked_at": "2026-12-02T21:40:11Z", "detail": "below the bar", "metrics": None}
    assert "failed gate 4" in (ModeDecision("extractive", "auto", "r", failed).unqualified or "")
    assert "failed gate 4" in (ModeDecision("extractive", "extractive", "r", failed).unqualified or "")
    assert ModeDecision("generate", "generate", "r", failed).unqualified is None  # pinned: what gate 4 measures under
    assert ModeDecision("generate", "auto", "r", {**failed, "status": "pass"}).unqualified is None


def test_an_in_process_replay_in_generate_mode_still_measures_the_unqualified_model(data: Path, tmp_path: Path) -> None:
    """`manualqa replay run --mode generate` is the operator's pin for that run, as gate 4's own replay:
    bench/suite/model_answers.py measures candidate models that way, before any of them qualified."""
    path = site_profile(tmp_path, RIGHT)
    res = CliRunner().invoke(main, ["replay", "run", str(tmp_path / "gold.jsonl"), "--profile", str(path),
                                    "--mode", "generate", "--json"], env={"MANUALQA_DATA": str(data)})
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output[res.output.index("{"):])
    assert summary["metrics"]["outcomes"] == {"answered": 2}


def test_a_web_ask_decides_the_mode_once(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 49 item 4: the route decided the mode (to reserve a generation slot) and the pipeline decided
    it again, each time reading gate 4's record: an admin's switch or a doctor run between the two could
    make one ask reserve for one mode and run in another."""
    import gateway.qualification.answer_mode as answer_mode

    calls: list[str] = []
    real = answer_mode.decide_mode

    def counted(configured: str, *args: object, **kwargs: object) -> ModeDecision:
        calls.append(configured)
        return real(configured, *args, **kwargs)  # type: ignore[arg-type]

    settings = Settings(data_dir=data)
    settings.runtime.profile = str(site_profile(tmp_path, RIGHT))
    with TestClient(create_app(settings, warm=False)) as client:
        client.get("/api/v1/health")
        monkeypatch.setattr(answer_mode, "decide_mode", counted)
        r = client.post("/api/v1/ask", json={"question": QUESTION})
        assert r.status_code == 200 and r.json()["mode"] == "extractive"
    assert calls == ["auto"]
