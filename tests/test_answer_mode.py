"""answer.mode = "auto": a profile's model writes answers only once it passed doctor's gate 4 (answers).

Real sample index, real pipeline and HTTP app; the model is the scripted test double. The verdict is
made by the real gate (tests/test_answers_gate.py covers how), here only read back."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from litestar.testing import TestClient

from gateway.answer_mode import decide_mode
from gateway.config import ConfigError, Settings, load_settings
from gateway.qa.qualify import answers_gate
from gateway.records.deployments import run_and_record
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
