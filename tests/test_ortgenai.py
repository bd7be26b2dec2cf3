"""The ortgenai backend on a real artifact: SmolLM2-135M-Instruct converted from the shipped GGUF by
deploy/convert_smollm2.py (once per source hash and tool versions, kept under build/ortgenai/<key>), then
streamed, cancelled, described, run in the supervised worker and checked by doctor; and one scripted
failure each for a missing folder, a missing or foreign tokenizer, and an execution provider that did not
run (ONNX Runtime's Azure provider loads, then places no node: gate 2 must say so)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from gateway.qualification.gates import run_doctor
from runtimes.base import GenerationConfig, GenerationStats, Runtime, RuntimeUnavailable
from runtimes.defaults import default_gguf_path
from runtimes.hashing import file_sha256, tree_sha256
from runtimes.profiles import load_profile
from runtimes.registry import create_runtime

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "profiles" / "x86-cpu-ortgenai.toml"
MESSAGES = [{"role": "user", "content": "What is a user manual for? Answer in one sentence."}]
LONG = [{"role": "user", "content": "Count from 1 to 1000, separated by commas."}]  # runs long under greedy
FOREIGN_TOKENIZER = REPO / "retrieval" / "models" / "minilm_l6_int8" / "tokenizer.json"  # BERT WordPiece
EXTRAS = "install the [genai] and [genai-convert] extras: make install-dev (CPython 3.11+)"


def _converter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("convert_smollm2", REPO / "deploy" / "convert_smollm2.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def artifact() -> Path:
    """The converted folder: built by the script once per source sha256 + tool versions, then reused."""
    if importlib.util.find_spec("onnxruntime_genai") is None:
        pytest.skip(f"onnxruntime-genai is not installed: {EXTRAS}")
    convert = _converter()
    versions = convert.tool_versions()
    missing = [n for n in ("transformers", "gguf", "accelerate", "torch", "onnx", "onnx-ir")
               if importlib.util.find_spec(n.replace("-", "_")) is None]
    if missing:
        pytest.skip(f"the conversion needs {', '.join(missing)}: {EXTRAS}")
    key = convert.build_key(file_sha256(default_gguf_path()), versions)
    folder = REPO / "build" / "ortgenai" / key
    if not (folder / "PROVENANCE.json").is_file():
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(REPO / "deploy" / "convert_smollm2.py"), str(folder)],
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        print(f"\nconvert_smollm2.py built {folder.name} in {time.perf_counter() - started:.1f} s")
    return folder


def _collect(runtime: Runtime, config: GenerationConfig, cancel: threading.Event | None = None,
             messages: list[dict[str, str]] = MESSAGES) -> tuple[list[str], list[GenerationStats]]:
    pieces: list[str] = []
    stats: list[GenerationStats] = []
    for item in runtime.stream(messages, config, cancel):
        (stats if isinstance(item, GenerationStats) else pieces).append(item)  # type: ignore[arg-type]
        assert not stats or item is stats[-1], "text after the stats record"
    return pieces, stats


@pytest.fixture(scope="module")
def loaded(artifact: Path) -> Iterator[Runtime]:
    runtime = create_runtime("ortgenai", str(artifact), {"isolation": "in-process", "n_ctx": 4096})
    runtime.load()
    yield runtime
    runtime.unload()


def _copy(src: Path, dst: Path, drop: tuple[str, ...] = ()) -> Path:
    """The folder again without the files named (copied: ONNX Runtime refuses weights linked from elsewhere)."""
    dst.mkdir(parents=True)
    for item in src.iterdir():
        if item.name not in drop:
            shutil.copyfile(item, dst / item.name)
    return dst


def test_the_conversion_is_recorded_and_reproducible(artifact: Path) -> None:
    record = json.loads((artifact / "PROVENANCE.json").read_text())
    digest, files = tree_sha256(artifact)
    assert record["artifact"]["sha256"] == digest and record["artifact"]["files"] == files
    assert record["source"]["sha256"] == file_sha256(default_gguf_path())
    assert "not the original weights" in record["source"]["weights"]
    build = record["conversion"]["steps"][1]["command"]
    assert "-m onnxruntime_genai.models.builder -i hf-dequantized" in build and "-p int4 -e cpu" in build
    assert record["tools"] == _converter().tool_versions()
    # the lock's tools rebuild the artifact bit for bit: the profile pins its digest
    assert load_profile(PROFILE).artifact.sha256 == digest, (
        f"{artifact} has digest {digest}; with other tool versions than the dev lock's, rebuild and update "
        "profiles/x86-cpu-ortgenai.toml's artifact.sha256")


def test_streams_text_then_one_stats_record(loaded: Runtime) -> None:
    pieces, stats = _collect(loaded, GenerationConfig(max_tokens=64))
    text = "".join(pieces)
    assert len(pieces) > 3 and len(text.split()) > 3, text
    (s,) = stats
    assert s.prompt_tokens == loaded.count_tokens(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        f"<|im_start|>user\n{MESSAGES[0]['content']}<|im_end|>\n<|im_start|>assistant\n")
    assert 3 < s.output_tokens <= 64 and s.stop_reason in ("stop", "length")
    assert s.ttft_ms is not None and 0 < s.ttft_ms < s.total_ms
    assert s.decode_tps and s.decode_tps > 1
    pieces, stats = _collect(loaded, GenerationConfig(max_tokens=5))
    assert stats[0].stop_reason == "length" and stats[0].output_tokens == 5
    assert "".join(pieces) == text[: len("".join(pieces))], "greedy decoding is deterministic"


def test_stop_strings_cut_the_text(loaded: Runtime) -> None:
    full = "".join(_collect(loaded, GenerationConfig(max_tokens=40))[0])
    word = full.split()[3]
    pieces, stats = _collect(loaded, GenerationConfig(max_tokens=40, stop=[word]))
    assert "".join(pieces) == full[: full.index(word)] and stats[0].stop_reason == "stop"


@pytest.mark.parametrize("how", ["event", "runtime.cancel"])
def test_cancel_from_another_thread_stops_it(loaded: Runtime, how: str) -> None:
    cancel = threading.Event()
    pieces: list[str] = []
    stats: list[GenerationStats] = []
    for item in loaded.stream(LONG, GenerationConfig(max_tokens=400, repeat_penalty=1.0), cancel):
        if isinstance(item, GenerationStats):
            stats.append(item)
        else:
            pieces.append(item)
            if len(pieces) == 3:
                stopper = cancel.set if how == "event" else loaded.cancel
                threading.Thread(target=stopper).start()
    assert stats[0].stop_reason == "cancelled" and stats[0].output_tokens < 40


def test_timeout_ends_with_its_reason(loaded: Runtime) -> None:
    # greedy counting runs far past 2 s at this model's speed; on a loaded machine the prompt alone may use
    # much of the deadline, so the test asks for the reason and the bound, not for a number of tokens
    _, stats = _collect(loaded, GenerationConfig(max_tokens=2000, timeout_s=2.0, repeat_penalty=1.0), messages=LONG)
    # stopped at the deadline, not after 2,000 tokens; the upper bound only bounds a hang (a loaded box
    # may spend seconds on the prompt, read in one step that the deadline cannot interrupt)
    assert stats[0].stop_reason == "timeout" and 2000 <= stats[0].total_ms < 60_000
    assert stats[0].output_tokens < 2000


def test_describe_gives_the_whole_chain(loaded: Runtime, artifact: Path) -> None:
    import onnxruntime_genai as og

    chain = loaded.describe().to_dict()
    assert chain["source"]["sha256"] == file_sha256(default_gguf_path())
    assert chain["source"]["model"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert "dequantized" in chain["source"]["weights"]
    assert chain["conversion"]["tools"]["onnxruntime-genai"] == og.__version__
    assert chain["conversion"]["tools"]["transformers"] and chain["conversion"]["tools"]["gguf"]
    assert chain["quantization"]["weights"] == "int4" and chain["quantization"]["block_size"] == 32
    assert chain["backend"] == "ortgenai" and chain["runtime"]["version"] == og.__version__
    assert chain["execution_provider"]["requested"] == "cpu"
    assert chain["execution_provider"]["ort_node_placement"] == {"CPUExecutionProvider": 309}
    assert chain["tokenizer"]["sha256"] == file_sha256(artifact / "tokenizer.json")
    assert "<|im_start|>" in chain["tokenizer"]["chat_template"]
    assert chain["artifact"]["sha256"] == tree_sha256(artifact)[0]
    assert chain["context"]["n_ctx"] == 4096


def test_it_runs_in_the_supervised_worker(artifact: Path, loaded: Runtime) -> None:
    runtime = create_runtime("ortgenai", str(artifact), {"n_ctx": 4096})  # the default isolation: a process
    runtime.load()
    try:
        pid = runtime.pid  # type: ignore[attr-defined]
        assert pid and pid != os.getpid()
        pieces, stats = _collect(runtime, GenerationConfig(max_tokens=12))
        assert pieces and stats[0].output_tokens == 12
        check = runtime.verify_backend()
        assert check.passed and check.evidence["worker"]["pid"] == pid
        assert runtime.describe().chain_id == loaded.describe().chain_id
    finally:
        runtime.unload()


def test_doctor_passes_gates_1_and_2_on_the_shipped_profile(artifact: Path, tmp_path: Path) -> None:
    text = PROFILE.read_text().replace(
        'path = "cache:artifacts/smollm2-135m-instruct-ortgenai-int4-cpu"', f'path = "{artifact}"')
    profile = tmp_path / "p.toml"
    profile.write_text(text.replace('rollback = "x86-cpu.toml"', f'rollback = "{PROFILE.parent / "x86-cpu.toml"}"'))
    report = run_doctor(load_profile(profile), load_rollback=False)
    assert [g.status for g in report.gates[:2]] == ["pass", "pass"], [g.detail for g in report.gates]
    assert report.artifact["sha256"] == tree_sha256(artifact)[0]
    assert report.chain["execution_provider"]["ort_node_placement"] == {"CPUExecutionProvider": 309}

    azure = tmp_path / "azure.toml"  # the scripted gate-2 failure, end to end through doctor
    azure.write_text(profile.read_text().replace('execution_provider = "cpu"', 'execution_provider = "AZURE"'))
    report = run_doctor(load_profile(azure), load_rollback=False)
    assert report.gates[0].passed and not report.gates[1].passed
    assert "'AZURE' was requested but ONNX Runtime placed no node on it" in report.gates[1].detail


def test_a_provider_that_did_not_run_fails_gate_2(artifact: Path) -> None:
    runtime = create_runtime("ortgenai", str(artifact), {"execution_provider": "AZURE"})
    runtime.load()  # ONNX Runtime registers the Azure provider, then runs every node on the CPU
    try:
        pieces, _ = _collect(runtime, GenerationConfig(max_tokens=4))
        assert pieces
        check = runtime.verify_backend()
        assert not check.passed and "silent fallback" in check.detail
        assert check.evidence["ort_node_placement"] == {"CPUExecutionProvider": 309}
    finally:
        runtime.unload()


def test_a_provider_missing_from_this_build_fails_the_load(artifact: Path) -> None:
    import onnxruntime_genai as og

    if og.is_cuda_available():
        pytest.skip("this onnxruntime-genai has CUDA")
    runtime = create_runtime("ortgenai", str(artifact), {"execution_provider": "cuda"})
    with pytest.raises(RuntimeUnavailable, match="could not load .* with execution provider 'cuda'"):
        runtime.load()


@pytest.mark.parametrize("isolation", ["in-process", "process"])
def test_missing_model_folder(tmp_path: Path, isolation: str, artifact: Path) -> None:
    runtime = create_runtime("ortgenai", str(tmp_path / "nowhere"), {"isolation": isolation})
    with pytest.raises(RuntimeUnavailable, match=r"model folder not found: .*nowhere; build it with deploy/conv"):
        runtime.load()


def test_missing_tokenizer_file(artifact: Path, tmp_path: Path) -> None:
    folder = _copy(artifact, tmp_path / "m", drop=("tokenizer.json",))
    with pytest.raises(RuntimeUnavailable, match=r"no tokenizer.json \(the tokenizer\)"):
        create_runtime("ortgenai", str(folder), {"isolation": "in-process"}).load()


def test_a_foreign_tokenizer_is_refused(artifact: Path, tmp_path: Path) -> None:
    folder = _copy(artifact, tmp_path / "m")
    shutil.copyfile(FOREIGN_TOKENIZER, folder / "tokenizer.json")
    with pytest.raises(RuntimeUnavailable, match=r"tokenizer.json is not this model's: its end token '<\|im_end\|>'"):
        create_runtime("ortgenai", str(folder), {"isolation": "in-process"}).load()


def test_a_file_changed_after_conversion_is_refused(artifact: Path, tmp_path: Path) -> None:
    folder = _copy(artifact, tmp_path / "m")
    with (folder / "tokenizer.json").open("a", encoding="utf-8") as fh:
        fh.write("\n")  # still this model's tokenizer, but not the file the conversion wrote
    with pytest.raises(RuntimeUnavailable, match=r"tokenizer.json differ\(s\) from what PROVENANCE.json recorded"):
        create_runtime("ortgenai", str(folder), {"isolation": "in-process"}).load()
    (folder / "PROVENANCE.json").unlink()  # a folder without its record loads, and its chain says so
    runtime = create_runtime("ortgenai", str(folder), {"isolation": "in-process"})
    runtime.load()
    assert runtime.describe().data["source"] == {"origin": "unrecorded: the folder has no PROVENANCE.json"}
    runtime.unload()


def test_without_onnxruntime_genai_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime_genai", None)  # import fails as if not installed
    with pytest.raises(RuntimeUnavailable, match=r"pip install 'manualqa\[genai\]'"):
        create_runtime("ortgenai", str(tmp_path), {"isolation": "in-process"}).load()


def test_stop_text_holds_back_a_partial_stop() -> None:
    from runtimes.ortgenai.runtime import _StopText

    stops = _StopText(["[END]"])
    out = [stops.feed(p) for p in ("Hello [E", "N", "D] more")]
    assert "".join(out) == "Hello " and stops.hit
    plain = _StopText(["</s>"])
    assert plain.feed("a<") + plain.feed("b") + plain.flush() == "a<b" and not plain.hit
