"""The rkllm backend driven against a C stub of librkllmrt.so, compiled here with gcc.

This proves the binding against a stub, NOT the NPU: struct layouts agree with what a C compiler
makes of the rkllm.h declarations (and with the published size table), the callback protocol
(WAITING with half a UTF-8 character, FINISH with perf, ERROR, pause by returning 1), abort,
busy, the version check and the log capture all work through the very code the product uses.
Whether a real librkllmrt.so on a real RK3588 behaves like the stub is not proven here.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from runtimes.base import GenerationConfig, GenerationError, GenerationStats, RuntimeUnavailable
from runtimes.rkllm import RKLLMRuntime, probe_environment
from runtimes.rkllm import layouts as L
from runtimes.rkllm.binding import RKLLMBinding, RuntimeVersionMismatch
from runtimes.rkllm.run_state import RunOutcome
from runtimes.rkllm.structs_13 import RKLLMInferParam_13, RKLLMInput_13, RKLLMParam_13
from runtimes.rkllm.structs_shared import RKLLMPerfStat, RKLLMResult

STUB_SRC = Path(__file__).parent / "rkllm_stub" / "rkllm_stub.c"
ANSWER = "Torque the M3 screws to 0.8 Nm — see [1]."
# stub build name -> (ABI define, version it prints)
BUILDS = {"121": ("121", "1.2.1"), "123": ("121", "1.2.3"), "130": ("130", "1.3.0")}
SYSTEM = "You are a manual assistant."


@pytest.fixture(scope="session")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed to build the RKLLM stub library (apt-get install gcc)"
    out = {}
    for name, (abi, version) in BUILDS.items():
        d = tmp_path_factory.mktemp(f"rkllm_{name}")
        lib = d / "librkllmrt.so"
        subprocess.run([gcc, "-std=gnu11", "-Wall", "-Werror", "-O1", "-shared", "-fPIC",
                        f"-DRKLLM_ABI={abi}", f'-DSTUB_VERSION="{version}"', str(STUB_SRC), "-o", str(lib)],
                       check=True)
        out[name] = str(lib)
    return out


@pytest.fixture(scope="session")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("model") / "qwen2.5-0.5b-w8a8-rk3588.rkllm"
    p.write_bytes(b"RKLLM" + bytes(range(256)) * 16)
    return str(p)


@pytest.fixture(autouse=True)
def fast_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RKLLM_STUB_TOKEN_DELAY_MS", "10")
    monkeypatch.delenv("RKLLM_LIB", raising=False)


def fake_driver_tree(root: Path, load: str | None = "NPU load:  Core0: 37%, Core1:  0%, Core2:  0%,\n") -> str:
    d = root / "sys/kernel/debug/rknpu"
    d.mkdir(parents=True)
    (d / "version").write_text("RKNPU driver: v0.9.8\n")
    if load is not None:
        (d / "load").write_text(load)
    return str(root)


def make_rt(lib: str, model: str, version: str, **opts) -> RKLLMRuntime:
    opts.setdefault("isolate_version_check", False)
    rt = RKLLMRuntime(model, {"lib_path": lib, "runtime_version": version, **opts})
    rt.load()
    return rt


def run(rt: RKLLMRuntime, content: str, system: str | None = None, **cfg) -> tuple[list[str], GenerationStats]:
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]
    items = list(rt.stream(msgs, GenerationConfig(**cfg)))
    assert isinstance(items[-1], GenerationStats) and not any(isinstance(i, GenerationStats) for i in items[:-1])
    return [str(i) for i in items[:-1]], items[-1]


ABIS = [("123", "1.2.3"), ("130", "1.3.0")]


# ------------------------------------------------------------------ layouts


def _stub_size(lib: ctypes.CDLL, name: str) -> int:
    fn = getattr(lib, name)
    fn.restype = ctypes.c_size_t
    return fn()


@pytest.mark.parametrize("build,version", ABIS)
def test_struct_sizes_and_offsets_match_the_c_compiler_and_the_table(stubs, build, version):
    lib = ctypes.CDLL(stubs[build])
    layout = L.LAYOUTS[L.abi_family(version)]
    checked = 0
    for cname, struct in layout.structs().items():
        assert ctypes.sizeof(struct) == _stub_size(lib, f"stub_sizeof_{cname}") == \
            L.EXPECTED_SIZES[layout.family][cname], cname
        anon = getattr(struct, "_anonymous_", ())
        names = [f[0] for f in struct._fields_ if f[0] not in anon]
        for a in anon:
            names += [f[0] for f in dict(struct._fields_)[a]._fields_]
        for field in names:
            assert getattr(struct, field).offset == _stub_size(lib, f"stub_offsetof_{cname}_{field}"), \
                f"{cname}.{field}"
            checked += 1
    assert checked > 40
    mm = layout.Input._fields_[3][1]._fields_[3][1]
    assert ctypes.sizeof(mm) == _stub_size(lib, "stub_sizeof_RKLLMMultiModalInput")
    assert ctypes.sizeof(RKLLMPerfStat) == _stub_size(lib, "stub_sizeof_RKLLMPerfStat") == 20


def test_published_130_param_offsets():
    p = RKLLMParam_13
    expect = {"model_path": 0, "max_context_len": 8, "max_new_tokens": 12, "top_k": 16, "n_keep": 20,
              "top_p": 24, "temperature": 28, "repeat_penalty": 32, "frequency_penalty": 36,
              "presence_penalty": 40, "mirostat": 44, "mirostat_tau": 48, "mirostat_eta": 52,
              "skip_special_token": 56, "ignore_eos_token": 57, "is_async": 58, "extend_param": 60}
    assert {k: getattr(p, k).offset for k in expect} == expect
    assert (RKLLMInferParam_13.keep_history.offset, RKLLMInferParam_13.max_new_tokens.offset) == (32, 36)
    assert RKLLMResult.perf.offset == 48 and RKLLMInput_13.prompt_input.offset == 16


# ------------------------------------------------------------------ streaming


@pytest.mark.parametrize("build,version", ABIS)
def test_stream_reassembles_text_with_a_split_multibyte_character(stubs, model, build, version):
    rt = make_rt(stubs[build], model, version)
    try:
        pieces, stats = run(rt, "How tight are the M3 screws?")
    finally:
        rt.unload()
    assert "".join(pieces) == ANSWER
    # the stub sends " \xe2" (WAITING) then "\x80\x94" (NORMAL): the space comes out first, the dash whole
    i = pieces.index("—")
    assert pieces[i - 1].endswith(" ") and "\ufffd" not in "".join(pieces)
    assert stats.stop_reason == "stop" and stats.ttft_ms is not None and stats.ttft_ms > 0
    assert stats.output_tokens == stats.backend_perf["generate_tokens"] == stats.backend_perf["callbacks_normal"]
    assert stats.backend_perf["memory_usage_mb"] == 123.5
    assert stats.prompt_tokens == stats.backend_perf["prefill_tokens"] > 0
    assert stats.decode_tps and stats.decode_tps > 0


def test_system_prompt_is_folded_into_the_user_turn_once(stubs, model):
    rt = make_rt(stubs["130"], model, "1.3.0")
    try:
        pieces, _ = run(rt, "/echo torque?", system=SYSTEM)
    finally:
        rt.unload()
    text = "".join(pieces)
    assert text.startswith("role=user system= prompt_tokens=")
    assert text.count(SYSTEM) == 1 and text.endswith(f"prompt={SYSTEM}\n\n/echo torque?")


def test_custom_chat_template_passes_the_system_prompt_through_set_chat_template(stubs, model):
    tpl = {"system": "<|im_start|>system\n{system}<|im_end|>\n", "prefix": "<|im_start|>user\n",
           "postfix": "<|im_end|>\n<|im_start|>assistant\n"}
    rt = make_rt(stubs["123"], model, "1.2.3", chat_template=tpl)
    try:
        text = "".join(run(rt, "/echo hi", system=SYSTEM)[0])
        chain = rt.describe().to_dict()
    finally:
        rt.unload()
    assert f"system=<|im_start|>system\n{SYSTEM}<|im_end|>" in text
    assert text.endswith("prompt=/echo hi")
    assert chain["tokenizer"]["chat_template"]["custom"]["prefix"] == "<|im_start|>user\n"


@pytest.mark.parametrize("build,version", ABIS)
def test_max_tokens_stops_with_length(stubs, model, build, version):
    rt = make_rt(stubs[build], model, version)
    try:
        pieces, stats = run(rt, "/long", max_tokens=4)
    finally:
        rt.unload()
    assert stats.stop_reason == "length" and stats.output_tokens == 4
    assert "".join(pieces) == "Torque the M3 screws"


def test_callback_pause_returns_from_run_without_finish(stubs, model):
    """1.2.x has no per-run token limit: the binding pauses the runtime by returning 1."""
    b = RKLLMBinding(stubs["123"], "1.2.3")
    box = b.default_param()
    box.param.model_path = model.encode()
    b.init(box)
    try:
        out = b.run("/long", RunOutcome(), max_new_tokens=2)
        assert b.clear_kv_cache(keep_system_prompt=True) == 0
    finally:
        b.destroy()
    assert out.paused and not out.finished and out.rc == 0 and out.tokens == 2 and out.perf == {}


def test_stop_strings_cut_the_answer(stubs, model):
    rt = make_rt(stubs["130"], model, "1.3.0")
    try:
        pieces, stats = run(rt, "question", stop=["0.8 Nm"])
    finally:
        rt.unload()
    assert "".join(pieces) == "Torque the M3 screws to " and stats.stop_reason == "stop"


# ------------------------------------------------------------------ cancel, busy


@pytest.mark.parametrize("build,version", ABIS)
def test_busy_during_a_run_and_cancel_aborts_early(stubs, model, build, version, monkeypatch):
    # 100 ms a token: the whole "/long" answer takes about 40 s, so "stopped early" has a margin of
    # seconds, not of the 10 ms a token that a busy box could swallow
    monkeypatch.setenv("RKLLM_STUB_TOKEN_DELAY_MS", "100")
    rt = make_rt(stubs[build], model, version)
    seen: dict[str, object] = {}
    try:
        gen = rt.stream([{"role": "user", "content": "/long"}], GenerationConfig(max_tokens=1000))
        pieces = [next(gen), next(gen)]
        seen["busy"], seen["lib_running"] = rt.busy, rt.binding.is_running()
        with pytest.raises(GenerationError, match="busy"):
            list(rt.stream([{"role": "user", "content": "again"}], GenerationConfig()))
        t0 = time.perf_counter()
        threading.Timer(0.05, rt.cancel).start()
        rest = list(gen)
        took = time.perf_counter() - t0
        stats = rest[-1]
        assert isinstance(stats, GenerationStats)
        assert seen == {"busy": True, "lib_running": True}
        assert stats.stop_reason == "cancelled"
        assert len("".join(pieces + rest[:-1])) < len(ANSWER) * 40 / 4
        assert took < 10.0  # a quarter of the whole answer's time
        assert not rt.busy and not rt.binding.is_running()
        # the handle is usable again after an abort
        assert "".join(run(rt, "again")[0]) == ANSWER
    finally:
        rt.unload()


def test_abandoned_stream_aborts_and_frees_the_handle(stubs, model):
    rt = make_rt(stubs["130"], model, "1.3.0")
    try:
        gen = rt.stream([{"role": "user", "content": "/long"}], GenerationConfig(max_tokens=1000))
        next(gen)
        gen.close()
        assert not rt.busy and not rt.binding.is_running()
    finally:
        rt.unload()


def test_unload_during_a_run_aborts_it_first(stubs, model):
    rt = make_rt(stubs["123"], model, "1.2.3")
    gen = rt.stream([{"role": "user", "content": "/long"}], GenerationConfig(max_tokens=1000))
    next(gen)
    rt.unload()
    assert rt.binding is None
    assert list(gen)[-1].stop_reason == "cancelled"
    with pytest.raises(GenerationError, match="not loaded"):
        run(rt, "again")


def test_external_cancel_event(stubs, model, monkeypatch):
    monkeypatch.setenv("RKLLM_STUB_TOKEN_DELAY_MS", "100")  # 20 pieces are 2 s, not 0.2 s, on a busy box
    rt = make_rt(stubs["123"], model, "1.2.3")
    ev = threading.Event()
    try:
        items = []
        for item in rt.stream([{"role": "user", "content": "/long"}], GenerationConfig(max_tokens=1000), ev):
            items.append(item)
            ev.set()
    finally:
        rt.unload()
    assert items[-1].stop_reason == "cancelled" and len(items) < 20


# ------------------------------------------------------------------ prompt length


def test_over_long_prompt_is_refused_before_calling(stubs, model):
    rt = make_rt(stubs["130"], model, "1.3.0", max_context_len=64)
    try:
        with pytest.raises(GenerationError, match=r"prompt of about \d+ tokens .* exceeds max_context_len 64"):
            run(rt, "torque " * 40)
    finally:
        rt.unload()


def test_runtime_error_state_becomes_generation_error(stubs, model, monkeypatch):
    """If the estimate lets a prompt through that the runtime rejects, its ERROR state is reported."""
    rt = make_rt(stubs["123"], model, "1.2.3", max_context_len=64)
    monkeypatch.setattr(rt, "count_tokens", lambda text: 1)
    try:
        with pytest.raises(GenerationError, match="RKLLM_RUN_ERROR.*returned -1"):
            run(rt, "torque " * 60)
        assert "".join(run(rt, "short")[0]) == ANSWER  # still usable afterwards
    finally:
        rt.unload()


# ------------------------------------------------------------------ versions, init log, provenance


@pytest.mark.parametrize("isolate", [False, True])
def test_describe_carries_the_captured_init_lines(stubs, model, isolate):
    rt = make_rt(stubs["123"], model, "1.2.3", isolate_version_check=isolate, model_source="Qwen/Qwen2.5-0.5B")
    try:
        chain = rt.describe().to_dict()
    finally:
        rt.unload()
    r = chain["runtime"]
    assert (r["rkllm_runtime_version"], r["rknpu_driver_version"], r["platform"]) == ("1.2.3", "0.9.8", "RK3588")
    assert (r["npu_core_num"], r["max_context_limit"], r["version_confirmed"]) == (3, 4096, True)
    assert r["library_sha256"] == hashlib.sha256(Path(stubs["123"]).read_bytes()).hexdigest()
    assert chain["conversion"] == {"tool": "rkllm-toolkit", "version": "1.2.1b1"}
    assert chain["quantization"]["dtype"] == "W8A8" and chain["backend"] == "rkllm"
    assert chain["artifact"]["sha256"] == hashlib.sha256(Path(model).read_bytes()).hexdigest()
    assert chain["source"] == "Qwen/Qwen2.5-0.5B"
    assert chain["tokenizer"]["chat_template"] == "model's own template (applied by the runtime)"
    assert len(chain["chain_id"]) == 16


def test_init_fails_clearly_above_the_model_context_limit(stubs, model):
    with pytest.raises(RuntimeUnavailable, match=r"rkllm_init failed .*max_context_len \(8192\) exceeds"):
        make_rt(stubs["130"], model, "1.3.0", max_context_len=8192)


def test_init_fails_clearly_on_a_file_that_is_not_a_model(stubs, tmp_path):
    bad = tmp_path / "x.rkllm"
    bad.write_bytes(b"GGUF....")
    with pytest.raises(RuntimeUnavailable, match="invalid rknn llm model magic"):
        make_rt(stubs["123"], str(bad), "1.2.3")


@pytest.mark.parametrize("isolate", [False, True])
def test_declared_130_on_a_123_library_is_refused_not_a_crash(stubs, model, isolate):
    with pytest.raises(RuntimeVersionMismatch, match=r"locks 1\.3\.0 but .* reports 1\.2\.3 \(another ABI"):
        make_rt(stubs["123"], model, "1.3.0", isolate_version_check=isolate)


def test_same_family_but_other_patch_is_refused(stubs, model):
    with pytest.raises(RuntimeVersionMismatch, match=r"locks 1\.2\.1 but .* reports 1\.2\.3; fix"):
        make_rt(stubs["123"], model, "1.2.1")
    rt = make_rt(stubs["121"], model, "1.2.1")
    rt.unload()


def test_a_crash_in_init_is_contained_by_the_isolated_check(stubs, model, monkeypatch):
    monkeypatch.setenv("RKLLM_STUB_CRASH_IN_INIT", "1")
    with pytest.raises(RuntimeUnavailable, match=r"crashed \(SIGSEGV\) during rkllm_init with the 1\.3\.0"):
        make_rt(stubs["123"], model, "1.3.0", isolate_version_check=True)


def test_unknown_or_missing_version_is_refused(stubs, model):
    with pytest.raises(RuntimeUnavailable) as e:
        make_rt(stubs["123"], model, "1.1.4")
    assert str(e.value) == "RKLLM runtime 1.1.4 is not supported by this binding (supported: 1.2.1–1.2.3, 1.3.0)"
    with pytest.raises(RuntimeUnavailable, match="needs runtime_version"):
        RKLLMRuntime(model, {"lib_path": stubs["123"]}).load()


def test_missing_library_is_named(model, tmp_path):
    missing = str(tmp_path / "nowhere" / "librkllmrt.so")
    with pytest.raises(RuntimeUnavailable) as e:
        make_rt(missing, model, "1.2.3")
    msg = str(e.value)
    assert msg.startswith(f"RKLLM runtime library librkllmrt.so not found (looked in: {missing}")
    assert "install Rockchip's rknn-llm runtime for aarch64" in msg
    env = probe_environment(lib_path=missing, driver_root=str(tmp_path))
    assert env["library"] is None and env["library_sha256"] is None and env["driver_version"] is None
    assert not env["npu_load_readable"]
    assert any("librkllmrt.so not found" in m for m in env["missing"])
    assert any(m.startswith("RKNPU driver not found (/sys/kernel/debug/rknpu/version, /proc/rknpu/version "
                            "absent") for m in env["missing"])


def test_library_found_through_env(stubs, model, monkeypatch, tmp_path):
    monkeypatch.setenv("RKLLM_LIB", stubs["130"])
    env = probe_environment(driver_root=fake_driver_tree(tmp_path))
    assert env["library"] == str(Path(stubs["130"]).resolve()) and env["driver_version"] == "0.9.8"
    assert env["npu_load_readable"] and env["missing"] == [] and len(env["library_sha256"]) == 64
    rt = RKLLMRuntime(model, {"runtime_version": "1.3.0", "isolate_version_check": False})
    rt.load()
    rt.unload()


# ------------------------------------------------------------------ gate 2


def test_verify_backend_with_a_fake_driver_tree_passes(stubs, model, tmp_path):
    rt = make_rt(stubs["130"], model, "1.3.0", driver_root=fake_driver_tree(tmp_path))
    try:
        run(rt, "smoke")
        check = rt.verify_backend()
    finally:
        rt.unload()
    assert check.gate == 2 and check.passed, check.detail
    assert check.detail == "RKNPU driver 0.9.8; NPU load up to 37% (Core0) during the smoke prompt"
    assert check.evidence["npu_load_peak"] == {"Core0": 37, "Core1": 0, "Core2": 0}


def test_verify_backend_runs_its_own_smoke_prompt_when_none_was_seen(stubs, model, tmp_path):
    rt = make_rt(stubs["123"], model, "1.2.3", driver_root=fake_driver_tree(tmp_path))
    try:
        check = rt.verify_backend()
    finally:
        rt.unload()
    assert check.passed and len(check.evidence["npu_load_samples"]) >= 2


def test_verify_backend_without_driver_fails_with_the_reason(stubs, model, tmp_path):
    rt = make_rt(stubs["130"], model, "1.3.0", driver_root=str(tmp_path))
    try:
        run(rt, "smoke")
        check = rt.verify_backend()
    finally:
        rt.unload()
    assert not check.passed
    assert check.detail.startswith("RKNPU driver not found (/sys/kernel/debug/rknpu/version, /proc/rknpu/version")


@pytest.mark.parametrize("load,reason", [
    ("NPU load:  Core0:  0%, Core1:  0%, Core2:  0%,\n", "NPU load stayed at 0% on every core"),
    (None, "NPU load could not be observed during the smoke prompt: no NPU load file"),
])
def test_verify_backend_fails_when_no_npu_work_is_seen(stubs, model, tmp_path, load, reason):
    rt = make_rt(stubs["130"], model, "1.3.0", driver_root=fake_driver_tree(tmp_path, load))
    try:
        run(rt, "smoke")
        check = rt.verify_backend()
    finally:
        rt.unload()
    assert not check.passed and reason in check.detail, check.detail
