"""What one rkllm_run leaves behind, and the callback state that fills it on the library's thread.

rkllm_run is synchronous and calls back on the library's thread: the callback never raises
(ctypes would hand the C side garbage), decodes bytes with an incremental UTF-8 decoder (a
character may arrive split across callbacks) and only appends to a queue.
"""

from __future__ import annotations

import codecs
import ctypes
import queue
from dataclasses import dataclass, field

from runtimes.rkllm.structs_shared import RUN_ERROR, RUN_FINISH, RUN_NORMAL, RUN_WAITING, RKLLMPerfStat, RKLLMResult


@dataclass
class RunOutcome:
    """What one rkllm_run left behind, filled from the callback thread."""

    # text pieces, then None when rkllm_run has returned (put by the runtime's thread that called it)
    pieces: queue.Queue[str | None] = field(default_factory=queue.Queue)
    perf: dict[str, float | int] = field(default_factory=dict)  # RKLLMPerfStat's fields at the end of the run
    error: str | None = None
    tokens: int = 0
    paused: bool = False
    finished: bool = False
    rc: int | None = None


class RunState:
    """Per-run callback state. Everything here runs on the library's thread; nothing may raise."""

    def __init__(self, outcome: RunOutcome, max_tokens: int | None) -> None:
        self.outcome = outcome
        self.max_tokens = max_tokens
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def _flush(self) -> None:
        tail = self.decoder.decode(b"", final=True)
        if tail:
            self.outcome.pieces.put(tail)

    def on_event(self, result: ctypes._Pointer[RKLLMResult], state: int) -> int:
        out = self.outcome
        if state in (RUN_NORMAL, RUN_WAITING):
            # WAITING carries the first bytes of an incomplete character; the decoder holds them.
            raw = ctypes.string_at(result.contents.text) if result and result.contents.text else b""
            text = self.decoder.decode(raw)
            if text:
                out.pieces.put(text)
            if state == RUN_NORMAL:
                out.tokens += 1
                if self.max_tokens is not None and out.tokens >= self.max_tokens:
                    out.paused = True
                    self._flush()
                    return 1  # pause: the runtime stops generating and rkllm_run returns
        elif state == RUN_FINISH:
            self._flush()
            if result:
                p = result.contents.perf
                out.perf = {name: round(float(getattr(p, name)), 3) if "ms" in name or "mb" in name
                            else int(getattr(p, name)) for name, *_ in RKLLMPerfStat._fields_}
            out.finished = True
        elif state == RUN_ERROR:
            self._flush()
            out.error = "the RKLLM runtime reported an error (callback state RKLLM_RUN_ERROR)"
        return 0
