"""The supervised worker (runtimes.supervised): a backend that dies takes one answer with it, never us.

Each test drives tests.support.crashing:CrashingRuntime, declared native, so create_runtime runs it
in a worker process exactly as it runs llama.cpp. The faults are real: a NULL read through ctypes
(SIGSEGV), os.abort() (SIGABRT), SIGKILL from outside, a loop that ignores cancel. Run in-process,
as on the main branch before the worker existed, every one of them would end pytest itself.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from runtimes.base import GenerationConfig, GenerationStats, RuntimeUnavailable
from runtimes.registry import create_runtime
from runtimes.supervised import CrashPolicy, RuntimeFailed, SupervisedRuntime, WorkerCrashed

BACKEND = "tests.support.crashing:CrashingRuntime"


def ask(rt: SupervisedRuntime, text: str, cancel: threading.Event | None = None,
        timeout_s: float = 20.0) -> tuple[str, GenerationStats | None]:
    pieces: list[str] = []
    stats = None
    for item in rt.stream([{"role": "user", "content": text}], GenerationConfig(timeout_s=timeout_s), cancel):
        if isinstance(item, GenerationStats):
            stats = item
        else:
            pieces.append(item)
    return "".join(pieces), stats


def wait_ready(rt: SupervisedRuntime, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while rt.health()["state"] != "ready":
        assert time.monotonic() < deadline, rt.health()
        time.sleep(0.05)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie still answers kill(0): it is dead all the same
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def rt() -> Iterator[SupervisedRuntime]:
    runtime = create_runtime(BACKEND, "scripted", {"token_delay_s": 0.01})
    assert isinstance(runtime, SupervisedRuntime)  # native backends never run in our process
    runtime.load()
    yield runtime
    runtime.unload()


def test_native_backends_get_a_worker_unless_asked_in_process() -> None:
    assert isinstance(create_runtime("llamacpp", "default"), SupervisedRuntime)
    assert isinstance(create_runtime("rkllm", "x.rkllm"), SupervisedRuntime)
    assert not isinstance(create_runtime("llamacpp", "default", {"isolation": "in-process"}), SupervisedRuntime)
    assert not isinstance(create_runtime("tests.support.scripted:ScriptedRuntime", "s"), SupervisedRuntime)
    with pytest.raises(RuntimeUnavailable, match="isolation"):
        create_runtime("llamacpp", "default", {"isolation": "thread"})


def test_streams_tokens_from_another_process(rt: SupervisedRuntime) -> None:
    text, stats = ask(rt, "hello")
    assert text == "The board accepts 12 to 24 V [1]."
    assert stats is not None and stats.output_tokens == 8 and stats.stop_reason == "stop"
    assert rt.pid is not None and rt.pid != os.getpid()
    check = rt.verify_backend()  # the worker says which process it is: not ours
    assert check.passed and check.evidence["worker_pid"] == rt.pid
    assert rt.count_tokens("one two three") == 3 and rt.context_length == 4096


@pytest.mark.parametrize("word, signame", [("CRASH-SEGV", "SIGSEGV"), ("CRASH-ABORT", "SIGABRT")])
def test_a_crash_mid_answer_names_the_signal_and_the_next_answer_runs(rt: SupervisedRuntime, word: str,
                                                                       signame: str) -> None:
    first = rt.pid
    pieces: list[str] = []
    with pytest.raises(WorkerCrashed) as info:
        for item in rt.stream([{"role": "user", "content": word}], GenerationConfig()):
            pieces.append(item)
    assert info.value.reason.startswith(signame), info.value.reason
    assert str(info.value).startswith(f"generation backend crashed: {signame}")
    assert pieces == ["The", " board"]  # what it said before it died came through
    assert rt.health()["recent_crashes"][0]["reason"].startswith(signame)
    text, _ = ask(rt, "hello again")  # restarted (after the backoff, or at once on demand)
    assert text.startswith("The board") and rt.pid not in (None, first)
    assert rt.health()["state"] == "ready" and rt.restarts == 1


def test_sigkill_from_outside_mid_stream(rt: SupervisedRuntime) -> None:
    pid = rt.pid
    assert pid is not None
    pieces: list[str | GenerationStats] = []
    with pytest.raises(WorkerCrashed, match="SIGKILL"):
        # CRASH-STALL: two pieces, then the worker stalls; killed once the first has come, it dies
        # mid-answer however slowly this test runs (a timer raced a 80 ms answer on a busy box)
        for item in rt.stream([{"role": "user", "content": "CRASH-STALL"}], GenerationConfig(timeout_s=120)):
            pieces.append(item)
            if len(pieces) == 1:
                os.kill(pid, signal.SIGKILL)
    assert pieces[0] == "The"
    wait_ready(rt)
    assert ask(rt, "and now")[0].startswith("The board")


def test_repeated_crashes_mark_it_failed_until_reset() -> None:
    rt = create_runtime(BACKEND, "scripted")
    assert isinstance(rt, SupervisedRuntime)
    rt.policy = CrashPolicy(max_crashes=2, window_s=60, backoff_s=(0.0,))
    rt.load()
    try:
        for _ in range(2):
            with pytest.raises(WorkerCrashed):
                ask(rt, "CRASH-SEGV")
        health = rt.health()
        assert health["state"] == "failed" and "2 crashes within 60 s" in health["failure"]
        with pytest.raises(RuntimeFailed):
            ask(rt, "hello")  # no restart loop: it stays down until someone acts
        with pytest.raises(RuntimeFailed):
            rt.load()
        rt.reset()
        rt.load()
        assert ask(rt, "hello")[0].startswith("The board") and rt.health()["state"] == "ready"
    finally:
        rt.unload()


def test_restarts_that_fail_end_in_failed_not_in_a_loop(tmp_path) -> None:
    """A worker that can no longer load (the driver broke after it started) is not respawned forever."""
    rt = create_runtime(BACKEND, "scripted", {"load_marker": str(tmp_path / "loaded-once")})
    assert isinstance(rt, SupervisedRuntime)
    rt.policy = CrashPolicy(max_crashes=3, window_s=60, backoff_s=(0.0,))
    rt.load()
    try:
        with pytest.raises(WorkerCrashed, match="SIGSEGV"):
            ask(rt, "CRASH-SEGV")
        deadline = time.monotonic() + 60
        while rt.health()["state"] != "failed":
            assert time.monotonic() < deadline, rt.health()
            time.sleep(0.05)
        reasons = [c["reason"] for c in rt.health()["recent_crashes"]]
        assert reasons[0].startswith("SIGSEGV") and all("restart failed" in r for r in reasons[1:]), reasons
        with pytest.raises(RuntimeFailed):
            ask(rt, "hello")
    finally:
        rt.unload()


def test_cancel_while_the_backend_ignores_it_ends_the_computation(rt: SupervisedRuntime) -> None:
    """llama.cpp reads a prompt without looking at cancel: Stop must still free the CPU at once."""
    # before a first token nothing will honour the cancel: the worker is not given the whole grace
    assert CrashPolicy().prefill_grace_s < CrashPolicy().cancel_grace_s
    # Told apart by configuration, not by a stopwatch: with a cancel grace of 60 s, a worker ended
    # within 30 s was ended by the prefill grace, however busy the box.
    rt.policy = CrashPolicy(cancel_grace_s=60.0)
    rt.options["prefill_s"] = 600
    rt.unload()
    rt.load()  # the option reaches a fresh worker
    pid = rt.pid
    assert pid is not None
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()  # the prompt takes 600 s: the cancel always falls in it
    t0 = time.monotonic()
    text, stats = ask(rt, "CRASH-PREFILL", cancel, timeout_s=600)
    took = time.monotonic() - t0
    assert stats is not None and stats.stop_reason == "cancelled" and text == ""
    assert took < 30, took  # not the 60 s cancel grace, nor the 600 s the prompt would take
    while not gone(pid):
        assert time.monotonic() - t0 < 30, f"worker {pid} still computing after the cancel"
        time.sleep(0.05)
    assert not rt.health()["recent_crashes"]  # a stop is not a crash
    wait_ready(rt)
    assert ask(rt, "hello")[0].startswith("The board")


def test_a_hang_past_the_timeout_is_killed_and_replaced_not_counted(rt: SupervisedRuntime) -> None:
    pid = rt.pid
    t0 = time.monotonic()
    _, stats = ask(rt, "CRASH-HANG", timeout_s=0.5)
    assert time.monotonic() - t0 < 60  # killed, not waited for (the hang lasts an hour)
    assert stats is not None and stats.stop_reason == "timeout"
    assert not rt.health()["recent_crashes"]  # a timeout is a timeout, never a step toward failed
    assert gone(pid)
    assert ask(rt, "hello")[0].startswith("The board")


def test_a_crash_while_loading_is_a_load_failure_naming_the_signal() -> None:
    rt = create_runtime(BACKEND, "scripted", {"crash_on_load": "segv"})
    with pytest.raises(RuntimeUnavailable, match="crashed while loading: SIGSEGV"):
        rt.load()


def test_the_worker_ends_with_unload(rt: SupervisedRuntime) -> None:
    pid = rt.pid
    assert pid is not None
    rt.unload()
    assert gone(pid) and rt.health()["state"] == "unloaded"


def test_the_worker_ends_when_its_gateway_is_killed(tmp_path) -> None:
    """A gateway killed with SIGKILL leaves no model process behind (its closed pipe ends it)."""
    import subprocess
    import sys

    code = ("from runtimes.registry import create_runtime; import time, sys\n"
            f"rt = create_runtime({BACKEND!r}, 'scripted'); rt.load(); print(rt.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        pid = int(parent.stdout.readline())
        assert not gone(pid)
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 60
        while not gone(pid):
            assert time.monotonic() < deadline, f"worker {pid} outlived its gateway"
            time.sleep(0.05)
    finally:
        parent.kill()
