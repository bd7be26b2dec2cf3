"""The parse and OCR children's wall-clock backstop tells a starved child from a stuck one (issue 50).

A loaded full-suite run (two CPU-bound processes beside it on 2 cores) refused the good sample manual:
its nice-10 parse worker was still working when the fixed wall-clock backstop fired. A child still
using CPU now gets another period; one using none is killed at the end of its first idle period.
No assertion here depends on how fast the box is: the busy child needs several periods of CPU time
whatever the machine, and the stuck one would sleep a minute if nobody killed it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from ingest import child_wait
from ingest.child_wait import run_child

# Burns CPU until it has had 2.5 CPU-seconds (more wall time than 2 periods of 1 s on any box), then says so.
BUSY = [sys.executable, "-c",
        "import time\nwhile time.process_time() < 2.5:\n    pass\nprint('done')"]
STUCK = [sys.executable, "-c", "import time; time.sleep(60); print('woke')"]


def test_a_child_still_using_cpu_gets_more_periods() -> None:
    proc = run_child(BUSY, 1.0, max_periods=600)
    assert proc.returncode == 0 and proc.stdout.decode().strip() == "done"


def test_subprocess_run_alone_would_have_stopped_it() -> None:
    # what the backstop was before: one period, whatever the child was doing
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(BUSY, capture_output=True, timeout=1.0, check=False)


def test_a_child_using_no_cpu_is_killed_and_reaped() -> None:
    with pytest.raises(subprocess.TimeoutExpired) as info:
        run_child(STUCK, 0.5, max_periods=600)
    assert info.value.timeout < 60  # killed when it stopped using CPU, not when its sleep ended


def test_without_a_readable_cpu_time_the_first_period_is_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(child_wait, "cpu_time_s", lambda pid: None)
    with pytest.raises(subprocess.TimeoutExpired):
        run_child(BUSY, 1.0, max_periods=600)


def test_a_starved_child_is_not_waited_for_forever() -> None:
    with pytest.raises(subprocess.TimeoutExpired) as info:
        run_child(BUSY, 0.2, max_periods=2)
    assert info.value.timeout <= 0.4 + 1e-9  # two periods at most (one, if it got no CPU in the first)


def test_the_cpu_time_of_this_process_is_read() -> None:
    import os

    first = child_wait.cpu_time_s(os.getpid())
    assert first is not None and first > 0
    assert child_wait.cpu_time_s(2**22 + 12345) is None  # no such process
