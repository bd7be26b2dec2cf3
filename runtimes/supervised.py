"""A native backend in its own process, behind the same Runtime contract (as Ollama runs its runner).

Why: llama.cpp and RKLLM run C code that can segfault, abort or be OOM-killed (llama.cpp's AMX
path on Sapphire Rapids segfaults on every prompt). In the gateway's process that is the end of
the gateway; here it is the end of one worker. The worker is restarted with a backoff; after
``max_crashes`` deaths within ``window_s`` the runtime is ``failed`` until someone calls reset(),
and the gateway answers extractively. A cancel or timeout that the backend does not honour within
``cancel_grace_s`` kills the worker, so Stop really frees the CPU; a fresh worker is started at once
for the next question. Neither is a crash: a timeout ends as ``timeout`` and never counts toward
``failed``. llama.cpp honours a cancel while it reads the prompt too (its abort callback); a backend
that cannot (``aborts_prompt`` False) gets only ``prefill_grace_s`` before its first token.

The process machinery (start, read, kill, restart) is in runtimes.worker_lifecycle, the policy and
the errors in runtimes.crash_policy; this module is the Runtime contract relayed over the pipe.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import NoReturn

from runtimes import worker_protocol as wp
from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    as_int,
)
from runtimes.crash_policy import Crash as Crash  # the names' old home: tests and callers import them here
from runtimes.crash_policy import CrashPolicy as CrashPolicy
from runtimes.crash_policy import RuntimeFailed as RuntimeFailed
from runtimes.crash_policy import WorkerCrashed as WorkerCrashed
from runtimes.crash_policy import WorkerHealth as WorkerHealth
from runtimes.worker_lifecycle import WorkerLifecycle
from runtimes.worker_protocol import rss_bytes

log = logging.getLogger("manualqa.runtime")


class SupervisedRuntime(WorkerLifecycle):
    """The parent's side: spawns ``python -m runtimes.worker_main`` and relays the contract to it."""

    backend = "supervised"

    # -- life cycle ----------------------------------------------------------------------------
    def load(self) -> None:
        with self._lock:
            self._closing = False
            if self.state == "failed":
                raise RuntimeFailed(self.failure or "the runtime failed")
            if self._alive():
                return
            self._spawn()

    def unload(self) -> None:
        self._closing = True
        got = self._lock.acquire(timeout=30)  # a stream in flight gets a moment to finish
        try:
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                try:
                    self._send(wp.Unload())
                    proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    proc.kill()
                    proc.wait()
            self._close_pipes(proc)
            self._proc = None
            if self.state != "failed":
                self.state = "unloaded"
        finally:
            if got:
                self._lock.release()

    def reset(self) -> None:
        """An admin acted: forget the crashes, stop the worker; the next use starts a fresh one."""
        self.unload()
        with self._lock:
            self.crashes.clear()
            self.state, self.failure = "unloaded", None

    # A loaded backend's plain facts, as the worker reported them (None before it loaded).
    def _fact(self, name: str) -> int | None:
        return self._ready.facts.get(name) if self._ready is not None else None

    n_threads = property(lambda self: self._fact("n_threads"))
    n_threads_batch = property(lambda self: self._fact("n_threads_batch"))
    n_gpu_layers = property(lambda self: self._fact("n_gpu_layers"))
    n_batch = property(lambda self: self._fact("n_batch"))

    def health(self) -> WorkerHealth:
        """What the gateway's health and admin pages say about this runtime."""
        pid = self.pid
        return {"state": self.state, "failure": self.failure, "pid": pid, "restarts": self.restarts,
                "rss_bytes": rss_bytes(pid) if pid else None,
                "recent_crashes": [{"seconds_ago": round(time.monotonic() - t, 1), "reason": r}
                                   for t, r in self.crashes]}

    # -- the contract ----------------------------------------------------------------------------
    def _call(self, request: Callable[[int], wp.Request]) -> wp.AnyReply:
        """Send request(id) and return its reply (a crash or an error raised as one)."""
        with self._lock:
            self._ensure_ready()
            rid = next(self._ids)
            message = self._next_after(request(rid), rid)
            if isinstance(message, wp.Dead):
                self._crashed(message.reason)
                raise WorkerCrashed(message.reason)
            if isinstance(message, wp.Error):
                raise GenerationError(message.message or "the worker reported an error")
            return message

    def _next_after(self, request: wp.Request, rid: int) -> wp.AnyReply:
        self._send(request)
        message = self._next(time.monotonic() + self.policy.call_timeout_s, rid)
        if message is None:
            self._crashed(f"no reply to {type(request).__name__.lower()} within {self.policy.call_timeout_s:g} s")
            raise WorkerCrashed(f"no reply to {type(request).__name__.lower()}")
        return message

    def count_tokens(self, text: str) -> int:
        reply = self._call(lambda rid: wp.Count(id=rid, text=text))
        return reply.n if isinstance(reply, wp.Counted) else _unexpected(reply)

    @property
    def context_length(self) -> int:
        if self._ready is not None:
            return self._ready.context_length
        return as_int(self.options.get("n_ctx") or 2048)

    def describe(self) -> ArtifactChain:
        if self._chain is None:  # the same artifact after a restart: the first description holds
            reply = self._call(lambda rid: wp.Describe(id=rid))
            self._chain = ArtifactChain(reply.v) if isinstance(reply, wp.Described) else _unexpected(reply)
        return self._chain

    def verify_backend(self) -> GateCheck:
        v = self._call(lambda rid: wp.Verify(id=rid))
        if not isinstance(v, wp.Verified):
            return _unexpected(v)
        evidence = dict(v.evidence)
        evidence["worker"] = {"pid": self.pid, "isolation": "process"}
        return GateCheck(v.gate, v.passed, v.detail, evidence)

    def stream(self, messages: list[dict[str, str]], config: GenerationConfig,
               cancel: threading.Event | None = None) -> Iterator[str | GenerationStats]:
        with self._lock:
            self._ensure_ready()
            self._cancel.clear()
            yield from self._stream(messages, config, cancel)

    def _stream(self, messages: list[dict[str, str]], config: GenerationConfig,
                cancel: threading.Event | None) -> Iterator[str | GenerationStats]:
        rid = next(self._ids)
        started = time.monotonic()
        deadline = started + max(config.timeout_s, 0.001)
        try:
            self._send(wp.Stream(id=rid, messages=messages, config=config))
        except OSError:  # it died between the readiness check and now: the reader says how
            last = self._next(time.monotonic() + 10, rid)
            reason = last.reason if isinstance(last, wp.Dead) else "the pipe broke"
            self._crashed(reason)
            raise WorkerCrashed(reason) from None
        stop_reason: str | None = None  # set when we asked the worker to stop
        asked_at = 0.0
        done = False
        spoke = False  # a first piece came: the backend is decoding and checks cancel between tokens
        try:
            while True:
                now = time.monotonic()
                if stop_reason is None:
                    if self._cancel.is_set() or (cancel is not None and cancel.is_set()):
                        stop_reason = "cancelled"
                    elif now > deadline:
                        stop_reason = "timeout"
                    if stop_reason is not None:
                        asked_at = now
                        self._send(wp.Cancel())
                elif now - asked_at > (grace := self._grace(spoke)):
                    # it ignored the cancel (or abort): end the computation itself; not a crash
                    log.warning("%s worker did not stop within %g s of %s; killed and replaced",
                                self.backend, grace, stop_reason)
                    self._replace_worker()
                    done = True
                    yield GenerationStats(total_ms=(time.monotonic() - started) * 1000, stop_reason=stop_reason)
                    return
                message = self._next(now + 0.02, rid)  # short waits: the loop watches cancel and deadline
                if message is None:
                    continue
                if isinstance(message, wp.Text):
                    spoke = True
                    if stop_reason is None:
                        yield message.v
                elif isinstance(message, wp.Stats):
                    stats = message.v
                    if stop_reason is not None and stats.stop_reason in ("stop", "cancelled"):
                        stats.stop_reason = stop_reason  # our cancel stopped it: for a timeout, say so
                    yield stats
                elif isinstance(message, wp.End):
                    done = True
                    return
                elif isinstance(message, wp.Error):
                    done = True
                    raise GenerationError(message.message or "the worker reported an error")
                elif isinstance(message, wp.Dead):
                    done = True
                    self._crashed(message.reason)
                    raise WorkerCrashed(message.reason)
        finally:
            if not done:  # the consumer went away mid-stream: the computation must end too
                self._abandon(rid, spoke)

    def _grace(self, spoke: bool) -> float:
        if spoke or self.aborts_prompt:
            return self.policy.cancel_grace_s
        return min(self.policy.prefill_grace_s, self.policy.cancel_grace_s)

    def _abandon(self, rid: int, spoke: bool = True) -> None:
        try:
            self._send(wp.Cancel())
        except OSError:
            return
        end = time.monotonic() + self._grace(spoke)
        while True:
            message = self._next(end, rid)
            if message is None:
                self._replace_worker()
                return
            if isinstance(message, (wp.End, wp.Error)):
                return
            if isinstance(message, wp.Dead):
                self._crashed(message.reason)
                return


def _unexpected(reply: wp.AnyReply) -> NoReturn:
    raise GenerationError(f"the worker answered with an unexpected {type(reply).__name__}")
