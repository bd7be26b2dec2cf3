"""The one owner of the generation runtime's life cycle, for the server, the CLI and profile switches.

Why one owner: the runtime used to be (re)loaded from the app's warm-up, the answer-mode switch and
the profile switch, each with its own idea of "failed". Here it is one state machine:

    unloaded -> loading -> ready
                       \\-> failed(reason)     the load failed: no retry until reset() or a switch
    ready -> restarting -> ready               the worker crashed; it restarts with a backoff
    ready -> failed(reason)                    repeated crashes (runtimes.crash_policy.CrashPolicy)

While failed, the pipeline answers with the evidence (extractive) and /api/v1/health says
``degraded`` with the reason; an admin's reload (POST /api/v1/deployment/reload) calls reset().
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runtimes.base import RuntimeUnavailable

if TYPE_CHECKING:
    from runtimes.base import Runtime
    from runtimes.profiles import Profile

log = logging.getLogger("manualqa.runtime")


@dataclass
class RuntimeStatus:
    state: str  # unloaded | loading | ready | restarting | failed
    reason: str | None = None
    backend: str | None = None
    isolation: str | None = None  # "process" (a supervised worker) or "in-process"
    worker: dict[str, object] = field(default_factory=dict)  # pid, restarts, recent crashes, rss

    def to_dict(self) -> dict[str, object]:
        return {"state": self.state, "reason": self.reason, "backend": self.backend,
                "isolation": self.isolation, "worker": self.worker}


class RuntimeOwner:
    """Creates, loads, swaps and resets the profile's runtime; knows its state at every moment."""

    def __init__(self, profile: Callable[[], Profile], runtime: Runtime | None = None) -> None:
        self._profile = profile
        self._runtime = runtime
        self._lock = threading.RLock()
        self._loading = False
        self._load_failure: str | None = None
        self._owned = False  # loaded here (or handed over by a profile switch): close() unloads it
        # Held by the thread that runs runtime.stream until the stream has ended. The generation queue
        # (gateway.generation_queue) decides whose turn it is; this lock covers what outlives a turn:
        # a cancelled stream that the backend is still winding down when the next turn begins.
        self.busy = threading.Lock()

    def get(self) -> Runtime:
        """The loaded runtime; loads it on first use. Raises RuntimeUnavailable when failed."""
        with self._lock:
            if self._runtime is not None:
                failure = getattr(self._runtime, "state", None) == "failed"
                if failure:
                    raise RuntimeUnavailable("the runtime failed after it loaded: "
                                             + (getattr(self._runtime, "failure", None) or "repeated crashes"))
                return self._runtime
            if self._load_failure is not None:
                raise RuntimeUnavailable(f"the runtime could not load: {self._load_failure}")
            from runtimes.registry import create_runtime

            p = self._profile()
            self._loading = True
            try:
                rt = create_runtime(p.backend, p.artifact_path(), p.runtime_options())
                rt.load()
            except Exception as exc:
                self._load_failure = str(exc) or type(exc).__name__
                log.error("generation runtime failed to load: %s", self._load_failure)
                raise
            finally:
                self._loading = False
            self._runtime, self._owned = rt, True
            return rt

    def if_loaded(self) -> Runtime | None:
        """The runtime if one is loaded (never loads): health, deployment and shutdown read it."""
        return self._runtime

    def load_in_background(self) -> None:
        def load() -> None:
            try:
                self.get()
            except Exception:  # noqa: BLE001 - the state says why
                pass

        threading.Thread(target=load, name="manualqa-load-runtime", daemon=True).start()

    def status(self) -> RuntimeStatus:
        rt = self._runtime
        if rt is None:
            if self._loading:
                return RuntimeStatus("loading")
            if self._load_failure is not None:
                return RuntimeStatus("failed", f"the runtime failed to load: {self._load_failure}")
            return RuntimeStatus("unloaded")
        health = getattr(rt, "health", None)
        if health is None:
            return RuntimeStatus("ready", backend=rt.backend, isolation="in-process")
        h = health()
        state = h["state"]
        worker = {k: v for k, v in h.items() if k not in ("state", "failure")}
        return RuntimeStatus(state, h.get("failure"), rt.backend, "process", worker)

    def swap(self, runtime: Runtime | None, owned: bool = False) -> Runtime | None:
        """Put another runtime in place (a profile switch: owned; a test's scripted one); returns the old one."""
        with self._lock:
            old, self._runtime, self._owned = self._runtime, runtime, owned
            self._load_failure = None
            return old

    def close(self) -> None:
        """Stop the runtime this owner loaded (its worker process ends); one handed in stays the caller's."""
        with self._lock:
            rt, owned = self._runtime, self._owned
        if rt is not None and owned:
            try:
                rt.unload()
            except Exception as exc:  # noqa: BLE001 - a stopping gateway frees what it can
                log.warning("unloading the runtime: %s", exc)

    def reset(self) -> bool:
        """An admin acted on a failed runtime: forget the failure so the next use loads again.

        Returns True when there was a failure to forget."""
        with self._lock:
            rt = self._runtime
            failed = self._load_failure is not None or getattr(rt, "state", None) == "failed"
            if not failed:
                return False
            self._load_failure = None
            if rt is not None:
                self._runtime = None
                try:
                    rt.unload()
                except Exception as exc:  # noqa: BLE001 - a dead worker has nothing left to free
                    log.warning("unloading the failed runtime: %s", exc)
            log.info("runtime failure reset by an admin; the next answer loads the runtime again")
            return True
