"""Waiting for a parse or OCR child with a wall-clock backstop that tells a stuck child from a starved one.

Why: each child has a CPU-time limit of its own (RLIMIT_CPU), so a busy box makes it slower, never
refused; the wall-clock backstop is there for a child stuck without using CPU. A fixed wall limit
cannot tell the two apart: at load 9 on 2 cores a nice-10 parse worker gets about 1/40 of a core,
and a good manual was refused by the backstop (a full test run beside two CPU-bound processes,
issue 50). So when a period ends, the child's CPU time is read: a child that used CPU in that period
is starved and gets another one (up to ``max_periods`` in all); one that did not is stuck and is
killed. Where the CPU time cannot be read (no /proc), the first period is the limit, as before.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection, Mapping

MAX_PERIODS = 5  # a starved child is waited for at most this many backstop periods
MIN_PROGRESS_S = 0.05  # CPU seconds within one period that show the child is working, not stuck


def cpu_time_s(pid: int) -> float | None:
    """CPU time (user + system, all its threads) a live process has had so far; None where unreadable.

    (runtimes.machine reads the same for the model's worker; ingest, the bottom room, cannot import it.)"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            after_name = fh.read().rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
        ticks = int(after_name[11]) + int(after_name[12])  # utime, stime
    except (OSError, IndexError, ValueError):
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def run_child(command: list[str], period_s: float, *, max_periods: int = MAX_PERIODS,
              stdin: int | None = None, env: Mapping[str, str] | None = None, cwd: str | None = None,
              pass_fds: Collection[int] = ()) -> subprocess.CompletedProcess[bytes]:
    """Like ``subprocess.run(command, capture_output=True, timeout=period_s)``, except that a child still
    using CPU at the end of a period gets another one (``max_periods`` x period_s at most). Raises
    subprocess.TimeoutExpired, the child killed and reaped, when it is stuck or out of periods.
    stdin, env, cwd and pass_fds are subprocess.Popen's."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin, env=env,
                          cwd=cwd, pass_fds=pass_fds) as proc:
        used = waited = 0.0
        for _ in range(max(1, max_periods)):
            try:
                out, err = proc.communicate(timeout=period_s)
            except subprocess.TimeoutExpired:
                waited += period_s
                now = cpu_time_s(proc.pid)
                if now is None or now - used < MIN_PROGRESS_S:
                    break  # stuck (or unreadable): the backstop applies
                used = now
                continue
            return subprocess.CompletedProcess(command, proc.returncode, out, err)
        proc.kill()
        proc.communicate()
        raise subprocess.TimeoutExpired(command, waited)
