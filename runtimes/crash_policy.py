"""When a worker's death is a crash, and what follows: the policy, the errors a caller sees, the health.

Why a module of its own: the supervised runtime (runtimes.supervised), the worker's keeper
(runtimes.worker_lifecycle) and the gateway (which catches WorkerCrashed) all read these, and none
of them needs the process machinery to do so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from runtimes.base import GenerationError, RuntimeUnavailable


class WorkerCrashed(GenerationError):
    """The worker process died (or hung and was killed) during a request; ``reason`` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"generation backend crashed: {reason}")
        self.reason = reason


class RuntimeFailed(RuntimeUnavailable):
    """Too many crashes in a short window: no more restarts until an admin acts (reset())."""


@dataclass(frozen=True)
class CrashPolicy:
    max_crashes: int = 3  # deaths within window_s that mark the runtime failed
    window_s: float = 600.0
    backoff_s: tuple[float, ...] = (0.5, 2.0, 8.0)  # wait before the 1st, 2nd, 3rd... restart
    cancel_grace_s: float = 1.0  # a cancel not honoured by then kills the worker
    # Before its first token a backend that cannot abort its prompt (aborts_prompt False) is in one
    # native call: a cancel then is not waited for longer than this, so Stop frees the CPU at once.
    prefill_grace_s: float = 0.25
    load_timeout_s: float = 600.0  # a worker that has not loaded by then is killed
    call_timeout_s: float = 60.0  # count_tokens / describe / verify


class Crash(TypedDict):
    seconds_ago: float
    reason: str


class WorkerHealth(TypedDict):
    """What the gateway's health and admin pages say about a supervised runtime (SupervisedRuntime.health)."""

    state: str  # unloaded | loading | ready | restarting | failed
    failure: str | None
    pid: int | None
    restarts: int
    rss_bytes: int | None
    recent_crashes: list[Crash]
