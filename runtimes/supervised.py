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
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, NoReturn, TypedDict

from runtimes import worker_protocol as wp
from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    Runtime,
    RuntimeUnavailable,
    as_int,
)
from runtimes.worker_protocol import exit_reason, rss_bytes

log = logging.getLogger("manualqa.runtime")


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


class SupervisedRuntime(Runtime):
    """The parent's side: spawns ``python -m runtimes.worker_main`` and relays the contract to it."""

    backend = "supervised"

    def __init__(self, backend: str, runtime_cls: type[Runtime], artifact: str,
                 options: Mapping[str, object] | None = None, policy: CrashPolicy | None = None) -> None:
        super().__init__(artifact, options)
        self.backend_name = backend  # what the worker passes to the registry
        self.backend = runtime_cls.backend  # type: ignore[misc]  # the inner backend's facts, per instance
        self.accepts_grammar = runtime_cls.accepts_grammar  # type: ignore[misc]
        self.aborts_prompt = runtime_cls.aborts_prompt  # type: ignore[misc]
        self.install_hint = runtime_cls.install_hint  # type: ignore[misc]
        self.distributions = dict(runtime_cls.distributions)  # type: ignore[misc]
        self.policy = policy or CrashPolicy()
        self.state = "unloaded"  # unloaded | loading | ready | restarting | failed
        self.failure: str | None = None
        self.crashes: collections.deque[tuple[float, str]] = collections.deque()
        self.restarts = 0
        self._lock = threading.RLock()  # one request at a time; held across a stream
        self._proc: subprocess.Popen[bytes] | None = None
        self._inbox: queue.Queue[wp.AnyReply] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._ids = itertools.count(1)
        self._ready: wp.Ready | None = None
        self._chain: ArtifactChain | None = None
        self._closing = False

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

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def health(self) -> WorkerHealth:
        """What the gateway's health and admin pages say about this runtime."""
        pid = self.pid
        return {"state": self.state, "failure": self.failure, "pid": pid, "restarts": self.restarts,
                "rss_bytes": rss_bytes(pid) if pid else None,
                "recent_crashes": [{"seconds_ago": round(time.monotonic() - t, 1), "reason": r}
                                   for t, r in self.crashes]}

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self.state == "ready"

    def _spawn(self) -> None:
        """Start a worker and wait until it has loaded the artifact (caller holds the lock)."""
        self.state = "loading"
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)  # the same modules as ours, whether installed, editable or from a test's path
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "runtimes.worker_main", "--reply-fd", str(write_fd)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(write_fd,), start_new_session=True, env=env)
        except OSError as exc:
            os.close(read_fd)
            self.state = "unloaded"
            raise RuntimeUnavailable(f"could not start the {self.backend} worker process: {exc}") from exc
        finally:
            os.close(write_fd)
        self._proc, self._inbox = proc, queue.Queue()
        reply = os.fdopen(read_fd, "rb")
        proc._manualqa_reply = reply  # type: ignore[attr-defined]  # closed with the process
        self._stderr.clear()
        threading.Thread(target=self._read_replies, args=(proc, reply, self._inbox),
                         name=f"worker-{proc.pid}-replies", daemon=True).start()
        threading.Thread(target=self._drain_stderr, args=(proc,), name=f"worker-{proc.pid}-stderr",
                         daemon=True).start()
        try:
            self._send(wp.Init(backend=self.backend_name, artifact=self.artifact, options=self.options))
        except OSError:
            pass  # it died at once: the reader reports how
        message = self._next(time.monotonic() + self.policy.load_timeout_s, None)
        if message is None:
            self._kill()
            self.state = "unloaded"
            raise RuntimeUnavailable(f"the {self.backend} worker did not load within "
                                     f"{self.policy.load_timeout_s:g} s; killed")
        if isinstance(message, wp.Ready):
            self._ready = message
            self.state = "ready"
            log.info("%s worker %s ready (context %s tokens)", self.backend, proc.pid, message.context_length)
            return
        self.state = "unloaded"
        if isinstance(message, wp.Dead):
            raise RuntimeUnavailable(f"the {self.backend} worker crashed while loading: {message.reason}")
        self._kill()
        said = message.message if isinstance(message, (wp.LoadFailed, wp.Error)) else ""
        raise RuntimeUnavailable(said or "the worker could not load the artifact")

    def _read_replies(self, proc: subprocess.Popen[bytes], reply: IO[bytes],
                      inbox: queue.Queue[wp.AnyReply]) -> None:
        try:
            while True:
                message = wp.read_reply(reply)
                if message is None:
                    break
                inbox.put(message)
        except (OSError, ValueError):  # msgspec's errors are ValueErrors: a worker of another version
            pass
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # it closed the pipe but lives on: it is of no use any more
            proc.kill()
            code = proc.wait()
        time.sleep(0.05)  # the stderr reader's last lines (an abort's message) arrive with the exit
        tail = [ln for ln in self._stderr if ln.strip()][-3:]
        reason = exit_reason(code)
        if tail and code != 0:
            reason += f" (last output: {' | '.join(tail)[-300:]})"
        inbox.put(wp.Dead(reason=reason, returncode=code))
        self._booked_if_idle(proc, reason)

    def _booked_if_idle(self, proc: subprocess.Popen[bytes], reason: str) -> None:
        """A worker that dies between requests (kill -9, the OOM killer, which prefers it) is a crash as
        soon as it happens: logged, counted and restarted after the backoff, so health tells the truth
        and the next question does not wait for a load. A death during a request is booked by that
        request (it reads the "dead" message); a worker killed on purpose is no longer ``_proc``."""
        if self._closing:
            return
        with self._lock:
            if self._proc is proc and self.state == "ready" and not self._closing:
                self._crashed(f"died while idle: {reason}")

    def _drain_stderr(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for raw in iter(proc.stderr.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip()
            self._stderr.append(line)
            log.debug("%s worker %s: %s", self.backend, proc.pid, line)

    def _send(self, message: wp.Request) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise OSError("no worker process")
        wp.write_message(proc.stdin, message)

    def _next(self, deadline: float, rid: int | None) -> wp.AnyReply | None:
        """The next message for request rid (or a death); None at the deadline."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                message = self._inbox.get(timeout=min(left, 0.02))
            except queue.Empty:
                continue
            if isinstance(message, (wp.Dead, wp.Ready, wp.LoadFailed)) or getattr(message, "id", None) == rid:
                return message

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    @staticmethod
    def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
        for stream in (proc.stdin, getattr(proc, "_manualqa_reply", None)):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    # -- crashes and restarts --------------------------------------------------------------------
    def _crashed(self, reason: str) -> None:
        """Book a death; restart after the backoff, or mark the runtime failed (caller holds the lock)."""
        now = time.monotonic()
        self.crashes.append((now, reason))
        while self.crashes and now - self.crashes[0][0] > self.policy.window_s:
            self.crashes.popleft()
        if self._proc is not None:
            self._kill()
            self._close_pipes(self._proc)
            self._proc = None
        log.error("%s worker crashed: %s (%d in the last %g s)", self.backend, reason, len(self.crashes),
                  self.policy.window_s)
        if len(self.crashes) >= self.policy.max_crashes:
            self.state = "failed"
            self.failure = (f"{len(self.crashes)} crashes within {self.policy.window_s:g} s, the last: {reason}; "
                            "answers are extractive until an admin reloads the runtime")
            log.error("%s runtime failed: %s", self.backend, self.failure)
            return
        self.state = "restarting"
        backoff = self.policy.backoff_s[min(len(self.crashes), len(self.policy.backoff_s)) - 1]
        self._restart_later(backoff)

    def _restart_later(self, delay: float) -> None:
        def restart() -> None:
            time.sleep(delay)
            with self._lock:
                if self.state != "restarting" or self._closing:
                    return
                try:
                    self._spawn()
                    self.restarts += 1
                except RuntimeUnavailable as exc:
                    self._crashed(f"restart failed: {exc}")

        threading.Thread(target=restart, name=f"{self.backend}-restart", daemon=True).start()

    def _ensure_ready(self) -> None:
        """A ready worker for the next request: wait out a restart, refuse when failed (lock held)."""
        if self.state == "failed":
            raise RuntimeFailed(self.failure or "the runtime failed")
        if self._alive():
            return
        if self.state == "unloaded" and self._proc is None and self._ready is None:
            raise GenerationError(f"the {self.backend} runtime is not loaded; call load() first")
        try:
            self._spawn()
        except RuntimeUnavailable as exc:  # a restart that fails counts: repeated ones end in failed
            self._crashed(f"restart failed: {exc}")
            raise WorkerCrashed(f"restart failed: {exc}") from exc
        self.restarts += 1

    def _replace_worker(self) -> None:
        """Kill the worker (it ignored a cancel) and start a fresh one in the background: not a crash."""
        if self._proc is not None:
            self._kill()
            self._close_pipes(self._proc)
            self._proc = None
        self.state = "restarting"
        self._restart_later(0.0)

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
