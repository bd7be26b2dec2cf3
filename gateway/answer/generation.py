"""Generation: stream the model's answer within the deadline and report how it ended.

The runtime streams in its own thread (holding the generation lock), relayed here so that a cancel
or the deadline is noticed even while the runtime is silent; what streams is what is kept (echoed
<passage> fences are filtered as they arrive). `generate()` yields the Text events and returns a
`Generation`: the model's text, how it ended (failure, crash, timeout, cancel) and what it was
given. It decides nothing: gateway.answer.outcome does, with the support check. A runtime that
stops responding is abandoned CANCEL_GRACE_S after a cancel.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway.answer.events import Text
from gateway.answer.flags import AnswerFlag
from gateway.answer.grammar import citation_grammar
from gateway.answer.prompting import FenceFilter, PromptPlan, fit_prompt, strip_echoed_fences
from gateway.answer.result import elapsed_ms
from retrieval.types import Hit

if TYPE_CHECKING:
    from gateway.answer.deps import Model
    from gateway.config import AnswerSettings
    from runtimes.base import GenerationConfig, GenerationStats, Runtime

log = logging.getLogger("gateway.answer.pipeline")

# What the runtime's thread relays: ("text", str), ("stats", GenerationStats), ("error", message),
# ("crash", reason), ("timeout", None) or ("end", None)
Relayed = tuple[str, "str | GenerationStats | None"]

CANCEL_GRACE_S = 5.0  # how long a cancelled or timed-out runtime gets to stop by itself


@dataclass
class Generation:
    """What the model did for one answer; gateway.answer.outcome decides what it comes to."""

    chain: dict[str, object] | None = None  # the artifact chain JSON (None: no runtime loaded)
    unavailable: str | None = None  # the runtime could not load or the prompt not be built: nothing ran
    draft: str = ""  # the model's text as generated
    text: str = ""  # the draft without echoed <passage> fences
    failure: str | None = None  # the runtime's error (or the timeout)
    crash: str | None = None  # the backend's worker process died
    cancelled: bool = False  # cancelled (not timed out) while it streamed
    hits: list[Hit] = field(default_factory=list)  # the passages the prompt gave: hits[0] is [1]
    config: dict[str, object] = field(default_factory=dict)  # the generation config used
    flags: list[AnswerFlag] = field(default_factory=list)
    # load, prompt, ttft, queue (the lock), decode; tokens; stop_reason (a str)
    timings: dict[str, float | str | None] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """It ran to its end: the text is the model's whole answer, for the support check."""
        return self.unavailable is None and self.crash is None and self.failure is None and not self.cancelled


def chain_of(runtime: Runtime) -> dict[str, object] | None:
    try:
        return runtime.describe().to_dict()
    except Exception as exc:  # noqa: BLE001 - an answer does not fail for want of a description
        log.warning("runtime.describe() failed: %s", exc)
        return None


def prepare(config: GenerationConfig, runtime: Runtime, settings: AnswerSettings, question: str, given: list[Hit],
            max_tokens: int | None) -> PromptPlan:
    """The prompt of one answer, and `config` set as the pipeline sends it (token budget, deadline, the
    citation grammar): one place, so that what bench/suite/server.py times directly is what is asked."""
    config.max_tokens = max(1, min(max_tokens or config.max_tokens, settings.max_answer_tokens))
    config.timeout_s = min(config.timeout_s, settings.timeout_s)
    plan = fit_prompt(question, given[: settings.prompt_passages or None], runtime.count_tokens,
                      runtime.context_length, config.max_tokens, excerpt_chars=settings.excerpt_chars)
    config.max_tokens = plan.max_tokens
    if settings.constrain_citations and plan.hits and runtime.accepts_grammar:
        config.grammar = citation_grammar(len(plan.hits))
    return plan


def generate(model: Model, settings: AnswerSettings, question: str, given: list[Hit], cancel: threading.Event,
             max_tokens: int | None, t0: float, name: str = "answer") -> Generator[Text, None, Generation]:
    """Stream the model's answer to question from the passages given (as Text events); returns how it went.

    t0 is the answer's start: ttft_ms counts from it. name names the streaming thread.
    """
    gen = Generation()
    tl = time.perf_counter()
    try:
        config = model.profile.generation_config()
        runtime = model.runtime  # loads on the first answer: load_ms, not pipeline overhead
        gen.timings["load_ms"] = elapsed_ms(tl)
    except Exception as exc:  # noqa: BLE001 - a runtime that cannot load must not lose the answer
        # the runtime's own words say what happened: it could not load, or it failed after crashes
        gen.unavailable = f"runtime unavailable: {exc}"
        return gen
    gen.chain = chain_of(runtime)
    tp = time.perf_counter()
    try:
        plan = prepare(config, runtime, settings, question, given, max_tokens)
    except Exception as exc:  # noqa: BLE001
        gen.unavailable = f"prompt could not be built: {exc}"
        return gen
    gen.config, gen.hits = config.to_dict(), plan.hits
    gen.flags.extend(plan.flags)
    gen.timings.update(prompt_ms=elapsed_ms(tp), prompt_tokens_planned=plan.prompt_tokens)
    yield from _stream(gen, model, runtime, plan.messages, config, cancel, t0, name)
    return gen


def _stream(gen: Generation, model: Model, runtime: Runtime, messages: list[dict[str, str]],
            config: GenerationConfig, cancel: threading.Event, t0: float, name: str) -> Iterator[Text]:
    """The model's text as it streams, then what it said of itself into gen."""
    from runtimes.base import GenerationStats

    pieces: list[str] = []
    stats: GenerationStats | None = None
    timed_out = False
    deadline = time.monotonic() + config.timeout_s
    fences = FenceFilter()  # what streams is what is kept: no echoed <passage> tags, even briefly
    for kind, value in _pump(model.generation_lock, runtime, messages, config, cancel, deadline, gen, name):
        if kind == "text" and isinstance(value, str):
            if not pieces:
                gen.timings["ttft_ms"] = elapsed_ms(t0)
            pieces.append(value)
            shown = fences.feed(value)
            if shown:
                yield Text(shown)
        elif kind == "stats" and isinstance(value, GenerationStats):
            stats = value
        elif kind == "error" and isinstance(value, str):
            gen.failure = value
        elif kind == "crash" and isinstance(value, str):
            gen.crash = value
        elif kind == "timeout":
            timed_out = True
    tail = fences.flush()
    if tail:
        yield Text(tail)
    gen.draft = "".join(pieces)
    gen.text = strip_echoed_fences(gen.draft)
    if stats is not None:
        gen.timings.update(prompt_tokens=stats.prompt_tokens, output_tokens=stats.output_tokens,
                           runtime_ttft_ms=stats.ttft_ms, decode_tps=stats.decode_tps,
                           generation_ms=stats.total_ms, stop_reason=stats.stop_reason)
        timed_out = timed_out or stats.stop_reason == "timeout"
        if stats.stop_reason == "length":  # cut at max_tokens: the reader must know it is unfinished
            gen.flags.append(AnswerFlag("cut_at_max_tokens"))
        if stats.stop_reason == "error" and gen.failure is None:
            gen.failure = "the runtime reported an error"
    if timed_out:
        gen.flags.append(AnswerFlag("timeout"))
        gen.failure = gen.failure or f"generation timed out after {config.timeout_s:g} s"
    gen.cancelled = cancel.is_set() and not timed_out


def _pump(lock: threading.Lock, runtime: Runtime, messages: list[dict[str, str]], config: GenerationConfig,
          cancel: threading.Event, deadline: float, gen: Generation, name: str) -> Iterator[Relayed]:
    """Run runtime.stream in its own thread (holding the generation lock) and relay its items, so
    that a cancel or the deadline is noticed even while the runtime is silent.

    Yields ("text", str), ("stats", GenerationStats), ("error", message), ("crash", reason: the
    backend's worker process died) or ("timeout", None).
    """
    from runtimes.base import GenerationStats
    from runtimes.crash_policy import WorkerCrashed

    stop = threading.Event()  # what the runtime watches: set on cancel or timeout
    tq = time.perf_counter()
    while not lock.acquire(timeout=0.05):
        if cancel.is_set():
            return
        if time.monotonic() > deadline:
            yield "error", "the runtime stayed busy with other answers until the timeout"
            yield "timeout", None
            return
    gen.timings["queue_ms"] = elapsed_ms(tq)  # the wait for the lock (the pipeline adds the slot's)
    items: queue.Queue[Relayed] = queue.Queue()

    def run() -> None:
        try:
            for item in runtime.stream(messages, config, stop):
                items.put(("stats", item) if isinstance(item, GenerationStats) else ("text", item))
        except WorkerCrashed as exc:  # one answer lost to a dead worker; the gateway carries on
            items.put(("crash", str(exc)))
        except Exception as exc:  # noqa: BLE001 - relayed as the answer's error
            items.put(("error", f"{type(exc).__name__}: {exc}"))
        finally:
            lock.release()
            items.put(("end", None))

    thread = threading.Thread(target=run, name=f"generate-{name}", daemon=True)
    thread.start()
    try:
        yield from _relay(items, runtime, stop, cancel, deadline)
    finally:  # also when the consumer is closed mid-stream: the runtime must stop
        if thread.is_alive():
            stop.set()
            _cancel_runtime(runtime)


def _cancel_runtime(runtime: Runtime) -> None:
    try:
        runtime.cancel()
    except Exception as exc:  # noqa: BLE001 - best effort; the stop event is the main signal
        log.warning("runtime.cancel() failed: %s", exc)


def _relay(items: queue.Queue[Relayed], runtime: Runtime, stop: threading.Event,
           cancel: threading.Event, deadline: float) -> Iterator[Relayed]:
    give_up: float | None = None
    while True:
        if give_up is None and (cancel.is_set() or time.monotonic() > deadline):
            if not cancel.is_set():
                yield "timeout", None
            stop.set()
            _cancel_runtime(runtime)
            give_up = time.monotonic() + CANCEL_GRACE_S
        try:
            kind, value = items.get(timeout=0.05)
        except queue.Empty:
            if give_up is not None and time.monotonic() > give_up:
                yield "error", "the runtime did not stop after cancel; abandoned"
                return
            continue
        if kind == "end":
            return
        if kind == "text" and stop.is_set():
            continue  # pieces that raced the cancel are not shown
        yield kind, value
