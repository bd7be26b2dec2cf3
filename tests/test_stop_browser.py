"""Stop in a real browser frees the model (issue 27, item 2), measured from the server's side.

The gateway runs its model in a supervised worker (tests.support.crashing:CrashingRuntime, declared
native, runs there exactly as llama.cpp does). The word CRASH-PREFILL makes the worker burn the CPU
without looking at cancel, as llama.cpp does while it reads a prompt: the worst case for Stop. The
technician clicks Stop; the worker's CPU time (from /proc) must stop growing, the gateway must end it
after the short prefill grace (its log says which grace it applied: told by configuration, not by a
stopwatch, which a busy box defeats), and a question that was waiting in the queue behind it (asked
from a second page) must start on a fresh worker, not after the prompt.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from runtimes.supervised import CrashPolicy
from runtimes.worker_protocol import cpu_seconds
from tests.support.browser import WAIT_MS
from tests.support.http import bearer
from tests.support.server import GatewayServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

QUESTION = "What input voltage range does the piston board accept?"
PROFILE = """
name = "stop-test"
description = "test double: a native-declared scripted runtime whose prompt reading ignores cancel (tests only)"
target_device = "test"
backend = "tests.support.crashing:CrashingRuntime"
rollback = ""
[artifact]
path = "scripted"
sha256 = ""
[options]
script = "The piston board accepts 7 to 36 V [1]."
token_delay_s = 1.0
prefill_s = 120
[generation]
max_tokens = 64
[owners]
conversion = "tests"
integration = "tests"
"""


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("stop"), profile=PROFILE)
    srv.start()
    srv.key = srv.admin_key()  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def worker_pid(srv: GatewayServer) -> int:
    deadline = time.monotonic() + 30
    while True:
        r = httpx.get(srv.url + "/api/v1/deployment", headers=bearer(srv.key), timeout=10)  # type: ignore[attr-defined]
        rt = r.json()["runtime"]
        if rt["state"] == "ready" and rt["worker"]["pid"]:
            return int(rt["worker"]["pid"])
        assert time.monotonic() < deadline, rt
        time.sleep(0.1)


def busy(pid: int, window_s: float = 0.25) -> bool:
    """Did the process use CPU over the next window (a gone process is idle)? A tenth of a core is
    busy: on a loaded 2-core box a spinning process may get no more than a quarter of one."""
    before = cpu_seconds(pid)
    time.sleep(window_s)
    after = cpu_seconds(pid)
    return before is not None and after is not None and after - before > 0.1 * window_s


def idle_after(pid: int, since: float, limit_s: float = 30) -> float:
    """Seconds from `since` to the start of the first window in which the worker used no CPU."""
    while time.monotonic() - since < limit_s:
        t = time.monotonic()
        if not busy(pid):
            return t - since
    return float("inf")


def newest_answer(srv: GatewayServer, wanted: Any, timeout_s: float = 60) -> dict[str, Any]:
    """The newest row of the answer log once `wanted(row)` holds (polled: rows are written as answers end)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = httpx.get(srv.url + "/api/v1/answers?limit=1", headers=bearer(srv.key),  # type: ignore[attr-defined]
                         timeout=10).json()["answers"]
        if rows and wanted(rows[0]):
            return rows[0]
        assert time.monotonic() < deadline, rows
        time.sleep(0.1)


def has_answers(srv: GatewayServer) -> bool:
    return bool(httpx.get(srv.url + "/api/v1/answers?limit=1", headers=bearer(srv.key),  # type: ignore[attr-defined]
                          timeout=10).json()["answers"])


def open_page(browser: Any, viewport: dict[str, int]) -> Any:
    context = browser.new_context(viewport=viewport, has_touch=viewport["width"] < 500)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, {"width": 390, "height": 844}],
                         ids=["desktop", "phone"])
def test_stop_before_the_first_word_frees_the_worker_and_the_queue_moves(
        browser: Any, server: GatewayServer, viewport: dict[str, int]) -> None:
    pid = worker_pid(server)
    first, second = open_page(browser, viewport), open_page(browser, viewport)
    try:
        first.goto(server.url + "/")
        first.fill("#question", QUESTION + " CRASH-PREFILL")
        first.click("#ask")
        first.wait_for_selector("#outcome.evidence")  # the evidence is on screen; the model reads the prompt
        deadline = time.monotonic() + 60
        while not busy(pid):  # the worker is reading the prompt
            assert time.monotonic() < deadline, "the worker never started on the prompt"
        second.goto(server.url + "/")  # a second technician asks meanwhile: queued behind it
        second.fill("#question", QUESTION)
        second.click("#ask")
        try:
            second.wait_for_function("document.getElementById('meta').textContent.includes('Waiting for the model')",
                                     timeout=60_000)
        except Exception:
            raise AssertionError(second.inner_text("#meta") + " | " + second.inner_text("#outcome")) from None
        # busy in one of a few windows: on a loaded box a spinning process may get no CPU for a moment
        assert any(busy(pid) for _ in range(20)), "the worker stopped before Stop was clicked"
        grace = f"worker did not stop within {CrashPolicy().prefill_grace_s:g} s of cancelled; killed and replaced"
        assert CrashPolicy().prefill_grace_s < CrashPolicy().cancel_grace_s
        said = server.log_path.read_text(errors="replace").count(grace)
        first.click("#stop")
        stopped = time.monotonic()
        # The prompt would take 120 s: idle within 30 s is the worker ended, whatever the load. That it was
        # ended after the prefill grace (0.25 s) and not the 1 s cancel grace, the gateway's log says.
        idle = idle_after(pid, stopped)
        assert idle < 30, f"the worker computed for {idle:.2f} s after Stop"
        deadline = time.monotonic() + 30
        while server.log_path.read_text(errors="replace").count(grace) == said:
            assert time.monotonic() < deadline, "the gateway did not end the worker after the prefill grace"
            time.sleep(0.1)
        first.wait_for_selector("#outcome.cancelled")
        assert first.inner_text("#outcome") == "stopped"
        # the queued question starts on a fresh worker (not after the prompt) and is answered in full
        second.wait_for_function("['checking', 'answered'].includes(document.getElementById('outcome').textContent)")
        started = time.monotonic() - stopped
        assert started < 60, f"the queued question's first words came {started:.1f} s after Stop"
        second.wait_for_function("!['checking', 'evidence', '…']"
                                 ".includes(document.getElementById('outcome').textContent)")
        newest = newest_answer(server, lambda a: a["question"] == QUESTION)
        assert newest["draft"] == "The piston board accepts 7 to 36 V [1]."
        assert worker_pid(server) != pid  # the busy worker was ended, not waited for
    finally:
        first.context.close()
        second.context.close()


def test_stop_while_it_writes_ends_the_generation_at_once(browser: Any, server: GatewayServer) -> None:
    page = open_page(browser, {"width": 1280, "height": 900})
    try:
        pid = worker_pid(server)
        before = newest_answer(server, lambda a: True, timeout_s=0)["id"] if has_answers(server) else None
        page.goto(server.url + "/")
        page.fill("#question", QUESTION)
        page.click("#ask")
        # the model writes (its first word came; 1 s a word, so the Stop lands seconds before the end)
        page.wait_for_function("document.getElementById('outcome').textContent === 'checking'")
        page.click("#stop")
        page.wait_for_selector("#outcome.cancelled")
        newest = newest_answer(server, lambda a: a["id"] != before)  # logged once the runtime stopped
        assert newest["outcome"] == "cancelled"
        assert len(newest["draft"].split()) < 9  # the script has 9 words: it did not run to its end
        assert worker_pid(server) == pid  # a decoding backend honours cancel: the worker is kept
    finally:
        page.context.close()
