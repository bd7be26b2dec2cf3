"""CrashingRuntime: a scripted runtime that dies the way native backends die, for the supervisor's tests.

It is declared ``native``, so create_runtime("tests.support.crashing:CrashingRuntime", ...) runs it
in a supervised worker, exactly as llama.cpp runs. What it does is chosen by a word in the last
message, so that one question crashes and the next one is answered by the restarted worker:

  CRASH-SEGV    a real segmentation fault (a NULL read through ctypes) after two pieces
  CRASH-ABORT   os.abort() after two pieces (what a failed GGML_ASSERT does)
  CRASH-HANG    stops answering and ignores cancel (a deadlock in native code)
  CRASH-STALL   the same after two pieces: a test can then kill the worker mid-answer, whatever the load
  CRASH-PREFILL burns the CPU without yielding for options["prefill_s"] (default 30) seconds,
                ignoring cancel, as llama.cpp does while it reads a long prompt
Options: script (the answer), token_delay_s, crash_on_load ("segv" | "abort": die in load()),
load_marker (a path: the first load creates it, every later load segfaults: a restart that fails).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from runtimes.base import ArtifactChain, GateCheck, GenerationConfig, GenerationStats, Runtime


def segfault() -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV, no Python exception


class CrashingRuntime(Runtime):
    backend = "crashing"
    native = True

    def load(self) -> None:
        marker = self.options.get("load_marker")
        if marker:
            if os.path.exists(marker):
                segfault()
            open(marker, "w").close()
        how = self.options.get("crash_on_load")
        if how == "segv":
            segfault()
        elif how == "abort":
            os.abort()

    def stream(self, messages: list[dict[str, str]], config: GenerationConfig,
               cancel: threading.Event | None = None) -> Iterator[str | GenerationStats]:
        self._cancel.clear()
        prompt = messages[-1]["content"] if messages else ""
        started = time.perf_counter()
        if "CRASH-PREFILL" in prompt:
            end = time.monotonic() + float(self.options.get("prefill_s", 30))
            n = 0
            while time.monotonic() < end:  # no cancel check: native code reading a prompt
                n += 1
        if "CRASH-HANG" in prompt:
            time.sleep(3600)
        delay = float(self.options.get("token_delay_s", 0.0))
        pieces = str(self.options.get("script", "The board accepts 12 to 24 V [1].")).split(" ")
        produced, reason = 0, "stop"
        for i, word in enumerate(pieces):
            if i == 2 and "CRASH-SEGV" in prompt:
                segfault()
            if i == 2 and "CRASH-ABORT" in prompt:
                os.abort()
            if i == 2 and "CRASH-STALL" in prompt:
                time.sleep(3600)
            if self._cancel.is_set() or (cancel is not None and cancel.is_set()):
                reason = "cancelled"
                break
            # between tokens a cancel is seen at once, as llama.cpp sees it at its next token: the wait for
            # the next word is not what decides whether a Stop lands within the cancel grace
            if delay and (cancel if cancel is not None else self._cancel).wait(delay):
                reason = "cancelled"
                break
            produced += 1
            yield word if i == 0 else " " + word
        yield GenerationStats(prompt_tokens=len(prompt.split()), output_tokens=produced, ttft_ms=1.0,
                              total_ms=(time.perf_counter() - started) * 1000, stop_reason=reason)

    def describe(self) -> ArtifactChain:
        return ArtifactChain({"backend": self.backend, "artifact": {"path": self.artifact, "sha256": "0" * 64},
                              "runtime": {"library": "tests.support.crashing", "pid_free": True}})

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    @property
    def context_length(self) -> int:
        return int(self.options.get("context_length", 4096))

    def verify_backend(self) -> GateCheck:
        return GateCheck(2, True, f"scripted crashing runtime in process {os.getpid()}",
                         {"worker_pid": os.getpid()})


def options(**extra: Any) -> dict[str, Any]:
    return {"script": "The board accepts 12 to 24 V [1].", **extra}
