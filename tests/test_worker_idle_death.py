"""A worker that dies between answers (kill -9, the OOM killer, which prefers it) is noticed when it
happens (issue 50, item 3): the death is logged and counted, the worker restarts on its own, and health
names the state; before, health said ready with no worker until the next question found it dead."""

from __future__ import annotations

import os
import signal
import time

from runtimes.registry import create_runtime
from runtimes.supervised import CrashPolicy, SupervisedRuntime
from tests.test_supervised import BACKEND, ask, gone


def _wait(predicate: object, timeout_s: float = 60.0) -> None:
    """Until predicate() holds; the limit only bounds a hang (a busy box may take seconds)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_an_idle_worker_that_dies_is_booked_and_replaced() -> None:
    rt = create_runtime(BACKEND, "scripted")
    assert isinstance(rt, SupervisedRuntime)
    rt.policy = CrashPolicy(max_crashes=3, window_s=60, backoff_s=(0.2,))
    rt.load()
    try:
        pid = rt.pid
        assert pid is not None and rt.health()["state"] == "ready"
        os.kill(pid, signal.SIGKILL)  # nobody is asking anything
        _wait(lambda: rt.health()["recent_crashes"])
        crash = rt.health()["recent_crashes"][0]
        assert "died while idle" in crash["reason"] and "SIGKILL" in crash["reason"]
        _wait(lambda: rt.health()["state"] == "ready" and rt.pid not in (None, pid))  # restarted by itself
        assert gone(pid) and rt.health()["restarts"] == 1
        assert ask(rt, "hello")[0].startswith("The board")
    finally:
        rt.unload()


def test_repeated_idle_deaths_mark_it_failed() -> None:
    rt = create_runtime(BACKEND, "scripted")
    assert isinstance(rt, SupervisedRuntime)
    rt.policy = CrashPolicy(max_crashes=2, window_s=60, backoff_s=(0.0,))
    rt.load()
    try:
        for n in range(2):
            _wait(lambda: rt.health()["state"] == "ready")
            pid = rt.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            _wait(lambda n=n: len(rt.health()["recent_crashes"]) == n + 1)
        _wait(lambda: rt.health()["state"] == "failed")
        assert "2 crashes within 60 s" in rt.health()["failure"]
    finally:
        rt.unload()


def test_unload_is_no_crash() -> None:
    rt = create_runtime(BACKEND, "scripted")
    assert isinstance(rt, SupervisedRuntime)
    rt.load()
    pid = rt.pid
    rt.unload()
    assert pid is not None and gone(pid)
    time.sleep(0.2)  # the reader thread has seen the end by now on any box; nothing may be booked
    assert rt.health()["recent_crashes"] == [] and rt.health()["state"] == "unloaded"
