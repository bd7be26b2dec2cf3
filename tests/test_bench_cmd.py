"""`manualqa bench`: profiles in their own processes, interleaved, medians, chains and artifact notes.

A real index of the two sample manuals in a temporary data directory; the fast tests run two
profiles on a scripted runtime (tests.support.chained) through the real CLI and child processes;
the slow one compares the default llama.cpp profile with the one-thread profile on the real model.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.qa.bench import artifact_notes, spread
from gateway.qa.conditions import thermal_readings

REPO = Path(__file__).resolve().parent.parent
MANUALQA = [str(Path(sys.executable).parent / "manualqa")]

PROFILE = """\
name = "{name}"
target_device = "test box"
backend = "tests.support.chained:ChainedScriptedRuntime"
rollback = ""

[artifact]
path = "fake-{name}.bin"
quantization = "{quant}"

[options]
script = "Check the jumper position first [1]."
token_delay_s = 0.01
n_threads = {threads}
context_length = 2048

[options.chain.quantization]
name = "{quant}"

[options.chain.tokenizer]
model = "gpt2"
vocab_size = {vocab}

[generation]
max_tokens = {max_tokens}
temperature = {temperature}

[owners]
conversion = "tests"
integration = "tests"
"""


def write_profile(path: Path, name: str, quant: str = "Q4_1", vocab: int = 49152, threads: int = 2,
                  max_tokens: int = 64, temperature: float = 0.0) -> Path:
    path.write_text(PROFILE.format(name=name, quant=quant, vocab=vocab, threads=threads,
                                   max_tokens=max_tokens, temperature=temperature), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, sample_pdfs: list[Path], embedder: Any) -> Path:
    from gateway.config import load_settings
    from gateway.services import Services

    data = tmp_path_factory.mktemp("benchdata")
    settings = load_settings(env={"MANUALQA_DATA": str(data)})
    gw = Services(settings, embedder=embedder)
    gw.ingest(sample_pdfs)
    assert gw.store.active_id()
    return data


@pytest.fixture(scope="module")
def qfile(tmp_path_factory: pytest.TempPathFactory, questions: list[dict[str, Any]]) -> Path:
    chosen = [q for q in questions if q.get("answerable")][:3]
    path = tmp_path_factory.mktemp("benchq") / "q.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in chosen), encoding="utf-8")
    return path


def bench(data_dir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # The answer timeout is wall-clock: on a loaded box a cold worker's first answer could pass the
    # default 120 s and fall back to the evidence, leaving a run with no generated answer (seen once
    # under load). The figures asserted here are counts and orders, not speeds, so the clock is taken away.
    env = {**os.environ, "MANUALQA_DATA": str(data_dir), "HF_HUB_OFFLINE": "1",
           "MANUALQA_ANSWER__TIMEOUT_S": "1800"}
    env.pop("MANUALQA_CONFIG", None)
    return subprocess.run([*MANUALQA, "bench", *args], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=timeout, check=False)


def answer_rows(data_dir: Path) -> int:
    db = data_dir / "gateway.db"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("select count(*) from answers").fetchone()[0]


def test_two_profiles_interleaved_with_medians_chains_and_quantization_note(
        data_dir: Path, qfile: Path, tmp_path: Path) -> None:
    a = write_profile(tmp_path / "a.toml", "alpha", quant="Q4_1", threads=2, max_tokens=64)
    b = write_profile(tmp_path / "b.toml", "beta", quant="Q8_0", threads=1, max_tokens=5, temperature=0.7)
    out = tmp_path / "bench.json"
    rows_before = answer_rows(data_dir)
    proc = bench(data_dir, "--profiles", str(a), str(b), "--questions", str(qfile), "--repeat", "2",
                 "--json", "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == report

    # interleaved: repeat 1 alpha, beta; repeat 2 alpha, beta
    assert [(o["repeat"], o["profile"]) for o in report["order"]] == [
        (1, "alpha"), (1, "beta"), (2, "alpha"), (2, "beta")]
    by = {p["label"]: p for p in report["profiles"]}
    assert set(by) == {"alpha", "beta"}
    pids = set()
    for label, threads in (("alpha", 2), ("beta", 1)):
        p = by[label]
        assert p["runs_ok"] == 2 and p["runs_failed"] == 0
        pids |= {r["pid"] for r in p["runs"]}
        assert p["threads"] == threads
        f = p["figures"]
        for key in ("cold_start_ms", "ttft_ms_median", "decode_tps", "peak_rss_mb"):
            s = f[key]
            assert s["n"] == 2 and s["min"] <= s["median"] <= s["max"], (label, key, s)
            assert s["median"] > 0
        # each run's answers came from its own scripted runtime, on the real index
        run = p["runs"][0]
        # (a question with weak evidence ends not_found without the model, by the pipeline's design)
        # (the model's text goes through the support check: answered or evidence_only, both generated)
        answered = [a for a in run["answers"] if a["mode"] == "generate"]
        assert run["questions"] == 3 and run["generated"] == len(answered) >= 1
        assert all(a["outcome"] in ("answered", "evidence_only", "not_found") for a in run["answers"])
        # one output limit for all (beta's 5, though alpha allows 64): the 6-piece script is cut at 5
        assert all(a["output_tokens"] == 5 and a["stop_reason"] == "length" for a in answered)
        assert p["quality"]["hit_at_5"]["median"] is not None
        assert p["chain"]["quantization"]["name"] == ("Q4_1" if label == "alpha" else "Q8_0")
        assert p["chain_id"] == p["chain"]["chain_id"]
    assert len(pids) == 4  # every run in its own process
    assert report["conditions"]["output_limit_tokens"] == 5
    assert by["alpha"]["chain_id"] != by["beta"]["chain_id"]
    cond = report["conditions"]
    assert cond["temperature"] == 0.0 and cond["concurrency"] == 1
    assert cond["prompt_set"]["questions"] == 3 and len(cond["prompt_set"]["file_sha256"]) == 64
    assert cond["cores_available"] >= 1 and cond["cpu_model"]
    assert cond["thermal_c"] == thermal_readings() or isinstance(cond["thermal_c"], dict)
    notes = report["notes"]
    assert any("differ in quantization (Q4_1 vs Q8_0)" in n and "not a pure runtime race" in n for n in notes)
    assert not any("tokenizer" in n for n in notes)
    assert any("beta declares temperature 0.7; bench ran it at 0" in n for n in notes)
    # the bench's answers never reach the user's answer log
    assert answer_rows(data_dir) == rows_before


def test_matching_chains_print_the_table_without_a_note_and_tokenizer_differences_are_noted(
        data_dir: Path, qfile: Path, tmp_path: Path) -> None:
    a = write_profile(tmp_path / "a.toml", "same")
    b = write_profile(tmp_path / "b.toml", "same", threads=1)  # same name: labels are made unique
    proc = bench(data_dir, "--profiles", str(a), str(b), "--questions", str(qfile), "--limit", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout
    assert "NOTE" not in table
    assert "same#2" in table and "run order: same same#2" in table
    assert "cold start s" in table and "decode tok/s" in table and "hit@5" in table
    assert "temperature 0" in table and "1 question(s)" in table

    # tokenizer: the note logic on chains that differ only there
    prof = [{"label": "x", "chain": {"quantization": {"name": "Q4_1"}, "tokenizer": {"model": "gpt2",
                                                                                        "vocab_size": 1}}},
            {"label": "y", "chain": {"quantization": {"name": "Q4_1"}, "tokenizer": {"model": "llama",
                                                                                        "vocab_size": 2}}}]
    notes = artifact_notes(prof)
    assert len(notes) == 1 and "differ in tokenizer (gpt2 vocab 1 vs llama vocab 2)" in notes[0]
    prof[1]["chain"]["tokenizer"] = dict(prof[0]["chain"]["tokenizer"])
    assert artifact_notes(prof) == []
    # a GGUF's metadata vs. a tokenizer.json with the same vocabulary and template: no note; another template: one
    gguf = {"model": "gpt2", "pre": "smollm", "vocab_size": 49152, "chat_template_sha256": "872be49d"}
    folder = {"file": "tokenizer.json", "sha256": "ab12", "vocab_size": 49152, "chat_template_sha256": "872be49d"}
    prof[0]["chain"]["tokenizer"], prof[1]["chain"]["tokenizer"] = gguf, folder
    assert artifact_notes(prof) == []
    prof[1]["chain"]["tokenizer"] = {**folder, "chat_template_sha256": "0000aaaa"}
    assert len(artifact_notes(prof)) == 1


def test_missing_profile_file_is_a_clear_error(data_dir: Path, qfile: Path, tmp_path: Path) -> None:
    a = write_profile(tmp_path / "a.toml", "alpha")
    proc = bench(data_dir, "--profiles", str(a), str(tmp_path / "nope.toml"), "--questions", str(qfile))
    assert proc.returncode != 0
    assert "profile not found" in proc.stderr and "nope.toml" in proc.stderr
    proc = bench(data_dir, "--questions", str(qfile))
    assert proc.returncode != 0 and "at least one profile" in proc.stderr


def test_failing_runtime_is_reported_and_exits_nonzero(data_dir: Path, qfile: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(PROFILE.format(name="bad", quant="Q4_1", vocab=1, threads=1, max_tokens=8, temperature=0.0)
                   .replace("[options]\n", '[options]\nfail_on_load = "no such accelerator"\n'), encoding="utf-8")
    proc = bench(data_dir, "--profiles", str(bad), "--questions", str(qfile), "--limit", "1", "--json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["failed_runs"] == 1
    assert any("no such accelerator" in n for n in report["notes"])


def test_spread_of_no_values_and_of_several() -> None:
    assert spread([None, "x"]) == {"median": None, "min": None, "max": None, "n": 0}
    assert spread([3, 1, 2]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}


@pytest.mark.slow
def test_real_default_profile_against_one_thread_profile(data_dir: Path, qfile: Path, tmp_path: Path) -> None:
    out = tmp_path / "real.json"
    proc = bench(data_dir, "--profiles", str(REPO / "profiles/x86-cpu.toml"),
                 str(REPO / "profiles/x86-cpu-1thread.toml"), "--questions", str(qfile), "--limit", "3",
                 "--output", str(out), timeout=900)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    by = {p["label"]: p for p in report["profiles"]}
    assert by["x86-cpu-smollm2-1thread"]["threads"] == 1
    assert by["x86-cpu-smollm2"]["threads"] >= 1
    for p in by.values():
        assert p["runs_ok"] == 1
        assert p["chain"]["quantization"]["name"] == "Q4_1"
        assert p["figures"]["decode_tps"]["median"] > 0
        assert p["figures"]["cold_start_ms"]["median"] > 0
    # same artifact, same tokenizer: no artifact note, and the chains differ only by what they record
    assert not any("differ in" in n for n in report["notes"])
    assert "x86-cpu-smollm2-1thread" in proc.stdout and "decode tok/s" in proc.stdout
