"""ScriptedRuntime: a Runtime that streams a fixed script, for tests of code above the contract.

Plug it in with create_runtime("tests.support.scripted:ScriptedRuntime", artifact, options).
Options: script (str: the answer), pieces (list[str], overrides script), token_delay_s,
fail_on_load (str), fail_after (int: raise GenerationError after this many pieces),
context_length (int), hold_while_exists (str: a path; each piece waits while that file exists, so a
test holds the model for exactly as long as it needs, whatever the machine's speed), holding_marker
(str: a path touched when a piece starts waiting on that file, so a test knows the model is held, not
merely that a question was admitted), hold_after (int: the hold starts only after this many pieces, so a
test can hold the model while the page shows it writing), hold_load_while_exists (str: a path; load()
waits while that file exists, so a test sees the gateway "loading" for as long as it needs). Everything it was asked is
recorded in `received`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    Runtime,
    RuntimeUnavailable,
)


class ScriptedRuntime(Runtime):
    backend = "scripted"

    def __init__(self, artifact: str, options: dict[str, Any] | None = None) -> None:
        super().__init__(artifact, options)
        script = str(self.options.get("script", "This is a scripted answer [1]."))
        self.pieces: list[str] = list(self.options.get("pieces") or _split(script))
        self.token_delay_s = float(self.options.get("token_delay_s", 0.0))
        self.received: list[list[dict[str, str]]] = []
        self.configs: list[GenerationConfig] = []
        self.loaded = False
        self._lock = threading.Lock()

    def load(self) -> None:
        gate = self.options.get("hold_load_while_exists")
        deadline = time.monotonic() + 600  # a test that forgets its gate fails, it does not hang
        while gate and os.path.exists(str(gate)) and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.options.get("fail_on_load"):
            raise RuntimeUnavailable(str(self.options["fail_on_load"]))
        self.loaded = True

    def unload(self) -> None:
        self.loaded = False

    def stream(
        self,
        messages: list[dict[str, str]],
        config: GenerationConfig,
        cancel: threading.Event | None = None,
    ) -> Iterator[str | GenerationStats]:
        if not self.loaded:
            raise GenerationError("scripted runtime is not loaded")
        with self._lock:
            self._cancel.clear()
            self.received.append([dict(m) for m in messages])
            self.configs.append(config)
            started = time.perf_counter()
            first: float | None = None
            produced, reason = 0, "stop"
            fail_after = self.options.get("fail_after")
            for piece in self.pieces:
                if self._cancel.is_set() or (cancel is not None and cancel.is_set()):
                    reason = "cancelled"
                    break
                if time.perf_counter() - started > config.timeout_s:
                    reason = "timeout"
                    break
                if produced >= config.max_tokens:
                    reason = "length"
                    break
                if fail_after is not None and produced >= int(fail_after):
                    raise GenerationError("scripted failure")
                if self.token_delay_s:
                    time.sleep(self.token_delay_s)
                hold = self.options.get("hold_while_exists")
                if produced < int(self.options.get("hold_after", 0)):
                    hold = None
                marker = self.options.get("holding_marker")
                if marker and hold and os.path.exists(str(hold)):
                    with open(str(marker), "a", encoding="utf-8"):
                        pass
                while hold and os.path.exists(str(hold)) and not self._cancel.is_set() and not (
                        cancel is not None and cancel.is_set()):
                    time.sleep(0.02)
                if first is None:
                    first = time.perf_counter()
                produced += 1
                yield piece
            end = time.perf_counter()
            decode_s = end - first if first is not None else 0.0
            yield GenerationStats(
                prompt_tokens=sum(self.count_tokens(m.get("content", "")) for m in messages),
                output_tokens=produced,
                ttft_ms=None if first is None else (first - started) * 1000,
                decode_tps=(produced - 1) / decode_s if produced > 1 and decode_s > 0 else None,
                total_ms=(end - started) * 1000,
                stop_reason=reason,
            )

    def describe(self) -> ArtifactChain:
        return ArtifactChain({"backend": self.backend, "artifact": {"path": self.artifact},
                              "script_pieces": len(self.pieces)})

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    @property
    def context_length(self) -> int:
        return int(self.options.get("context_length", 2048))

    def verify_backend(self) -> GateCheck:
        return GateCheck(2, self.loaded, "scripted runtime (tests only)")


def _split(text: str) -> list[str]:
    """Word pieces that keep their leading space, like a BPE tokenizer's output."""
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]
