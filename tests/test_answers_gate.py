"""Doctor's gate 4 ("answers"): a replay of a gold question set decides whether a profile's model is
trusted in generate mode. Real sample manuals, real index and pipeline; the model is the scripted
test double, so that "right" and "wrong" models are two scripts."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gateway.cli import main
from gateway.config import Settings
from gateway.qualification.answers_gate import answers_gate
from gateway.qualification.doctor import run_and_record
from gateway.qualification.gates import run_doctor
from gateway.records.deployments import qualification
from runtimes.profiles import ProfileError, load_profile, parse_profile
from tests.support.server import SCRIPTED_PROFILE

MODEL = b"a scripted model"
RIGHT = "Never plug or unplug any device while the printer is powered [1]."
WRONG = "Unplug a device only 30 seconds after the printer is powered [1]."  # a number the manual never gives
QUESTIONS = [
    {"id": "u1", "question": "Is it safe to unplug a device while the printer is powered?",
     "manual": "voron0_setup_guide.pdf", "pages": [2],
     "answer": "No: never plug or unplug any device while the printer is powered."},
    {"id": "u2", "question": "Can I disconnect a device from the board while the printer is on?",
     "manual": "voron0_setup_guide.pdf", "pages": [2],
     "answer": "No: never plug or unplug any device while the printer is powered."},
]


@pytest.fixture()
def data(tmp_path: Path, sample_data_dir: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(sample_data_dir, target)
    return target


def site_profile(tmp: Path, script: str, bar: str = "", name: str = "p.toml") -> Path:
    qs = tmp / "gold.jsonl"
    qs.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    (tmp / "scripted").write_bytes(MODEL)  # gate 1 checks the artifact's file against its sha256
    text = SCRIPTED_PROFILE.replace('sha256 = ""', f'sha256 = "{hashlib.sha256(MODEL).hexdigest()}"')
    (tmp / "prev.toml").write_text(text.format(script=RIGHT, delay=0.0).replace(
        'name = "scripted-test"', 'name = "scripted-previous"'), encoding="utf-8")
    path = tmp / name
    path.write_text(text.format(script=script, delay=0.0).replace('rollback = ""', 'rollback = "prev.toml"')
                    + f'\n[answers]\nquestions = "gold.jsonl"\nmax_p95_total_s = 120.0\n{bar}', encoding="utf-8")
    return path


def gate4(report: Any) -> Any:
    return next(g for g in report.gates if g.gate == 4)


def test_the_answers_table_is_typed_and_checked(tmp_path: Path) -> None:
    base = SCRIPTED_PROFILE.format(script=RIGHT, delay=0.0)
    p = parse_profile(base + '\n[answers]\nquestions = "q.jsonl"\nlimit = 5\nmin_green_rate = 0.5\n',
                      tmp_path / "p.toml")
    assert p.answers.limit == 5 and p.answers.min_green_rate == 0.5 and p.answers.min_answered_precision == 0.9
    assert p.answer_questions() == tmp_path / "q.jsonl"  # relative to the profile
    assert parse_profile(base, tmp_path / "p.toml").answer_questions() is None
    for bad, says in (("min_green_rate = 1.5", "between 0 and 1"), ("limit = -1", "answers.limit"),
                      ("questions = 3", "answers.questions"), ("min_precision = 0.9", "unknown key")):
        with pytest.raises(ProfileError, match=says) as err:
            parse_profile(base + f"\n[answers]\n{bad}\n", tmp_path / "p.toml")
        assert "p.toml" in str(err.value)


def test_without_a_question_set_gate_4_is_skipped_and_not_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(SCRIPTED_PROFILE.format(script=RIGHT, delay=0.0), encoding="utf-8")
    report = run_doctor(load_profile(path), load_rollback=False)
    assert gate4(report).status == "skipped" and not report.qualified
    assert 4 not in report.failed_gates()


def test_a_model_that_answers_right_qualifies_and_a_wrong_one_does_not(data: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=data)
    right = load_profile(site_profile(tmp_path, RIGHT))
    run = run_and_record(data, right, answers=answers_gate(settings))
    g = gate4(run.report)
    assert g.status == "pass", g.detail
    assert run.report.qualified and g.evidence["metrics"]["answered_precision"] == 1.0
    assert g.evidence["metrics"]["green_rate"] == 1.0 and "manualqa replay show" in g.detail
    assert qualification(data, right.name, right.content_hash)["gate"]["status"] == "pass"

    wrong = load_profile(site_profile(tmp_path, WRONG, name="wrong.toml"))
    bad = gate4(run_and_record(data, wrong, answers=answers_gate(settings)).report)
    assert bad.status == "fail" and "below the bar" in bad.detail
    # a wrong number is not supported by the passage: no green answer at all, or a wrong one
    assert bad.evidence["metrics"]["green_rate"] == 0.0 or bad.evidence["metrics"]["answered_precision"] < 0.9

    # a later run that skips gate 4 shows the verdict measured for this very profile, and when
    again = run_and_record(data, right)
    assert gate4(again.report).status == "pass" and "not rerun" in gate4(again.report).detail
    # the profile changed (another bar): its model was not measured under it
    changed = load_profile(site_profile(tmp_path, RIGHT, bar="min_green_rate = 0.4\n"))
    assert qualification(data, changed.name, changed.content_hash) is None


def test_a_green_answer_to_an_unanswerable_question_fails_the_bar(data: Path, tmp_path: Path) -> None:
    profile = load_profile(site_profile(tmp_path, RIGHT))
    gold = tmp_path / "gold.jsonl"
    # no manual says which devices may be unplugged: the script's true sentence still goes green
    off = {"id": "off", "question": "Which devices may I unplug while the printer is powered?", "pages": [],
           "answerable": False}
    gold.write_text(gold.read_text() + json.dumps(off) + "\n", encoding="utf-8")
    g = gate4(run_and_record(data, profile, answers=answers_gate(Settings(data_dir=data))).report)
    assert g.evidence["metrics"]["outcomes"] == {"answered": 3}
    assert g.status == "fail" and "unanswerable questions answered 1.00 > 0.05" in g.detail
    assert g.evidence["metrics"]["answered_precision"] == round(2 / 3, 4)  # a false answer is a wrong one


def test_questions_about_manuals_the_index_lacks_are_not_judged(data: Path, tmp_path: Path) -> None:
    path = site_profile(tmp_path, RIGHT)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({**QUESTIONS[0], "manual": "no_such_manual.pdf"}) + "\n", encoding="utf-8")
    g = gate4(run_and_record(data, load_profile(path), answers=answers_gate(Settings(data_dir=data))).report)
    assert g.status == "not run" and "no_such_manual.pdf" in g.detail and "ingest" in g.detail


def test_doctor_cli_runs_gate_4_and_says_whether_the_profile_qualifies(data: Path, tmp_path: Path) -> None:
    env = {"MANUALQA_DATA": str(data)}
    ok = CliRunner().invoke(main, ["doctor", "--profile", str(site_profile(tmp_path, RIGHT)), "--json"], env=env)
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["qualified"] is True
    bad = CliRunner().invoke(main, ["doctor", "--profile", str(site_profile(tmp_path, WRONG, name="w.toml"))],
                             env=env)
    assert bad.exit_code == 1 and "gate 4  FAIL" in bad.output and "not qualified for generate mode" in bad.output
    skipped = CliRunner().invoke(main, ["doctor", "--profile", str(tmp_path / "w.toml"), "--no-answers"], env=env)
    assert "gate 4  FAIL" in skipped.output and "not rerun" in skipped.output  # the last verdict, said so
    both = CliRunner().invoke(main, ["doctor", "--answers", "x.jsonl", "--no-answers"], env=env)
    assert both.exit_code == 2 and "contradict" in both.output


def test_a_model_that_turns_the_manual_around_gets_no_green_badge(data: Path, tmp_path: Path) -> None:
    turned = "Unplugging a device while the printer is powered is safe [1]."  # the manual says never
    g = gate4(run_and_record(data, load_profile(site_profile(tmp_path, turned)),
                             answers=answers_gate(Settings(data_dir=data))).report)
    assert g.status == "fail" and g.evidence["metrics"]["green_rate"] == 0.0, g.detail
