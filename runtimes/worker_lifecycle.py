"""The parent's hold on one worker process: start it, read its replies and stderr, kill it, book its deaths.

Why a module of its own: this is the machinery under runtimes.supervised (the Runtime contract
relayed over the pipe), kept apart so each reads on its own. A death is booked against the
CrashPolicy: a restart after the backoff, or ``failed`` after too many; a worker that ignored a
cancel is replaced, which is not a crash.
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
from collections.abc import Mapping
from typing import IO

from runtimes import worker_protocol as wp
from runtimes.base import ArtifactChain, GenerationError, Runtime, RuntimeUnavailable
from runtimes.crash_policy import CrashPolicy, RuntimeFailed, WorkerCrashed
from runtimes.worker_protocol import exit_reason

log = logging.getLogger("manualqa.runtime")


class WorkerLifecycle(Runtime):
    """One worker process kept for a runtime: its state, its crashes and its restarts (SupervisedRuntime's base)."""

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

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

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
