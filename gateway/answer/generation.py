"""Generation: stream the model's answer within the deadline, then keep only what the passages back.

The runtime streams in its own thread (holding the gateway's generation lock), relayed here so that
a cancel or the deadline is noticed even while the runtime is silent; what streams is what is kept
(echoed <passage> fences are filtered as they arrive). Afterwards every sentence is checked against
the passage it cites (gateway.answer.support): ``answered`` only when what is shown is supported,
otherwise the evidence is shown as such. A runtime that fails before any text falls back to the
evidence; one that stops responding is abandoned CANCEL_GRACE_S after a cancel.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

from gateway.answer.citations import parse_citations, resolve, validate
from gateway.answer.events import Text
from gateway.answer.grammar import citation_grammar
from gateway.answer.prompting import FenceFilter, fit_prompt, strip_echoed_fences
from gateway.answer.result import AnswerResult, elapsed_ms, fallback, use_evidence
from gateway.answer.support import addresses_question, check_answer, is_decline, supported_text
from retrieval.types import Hit

if TYPE_CHECKING:
    from gateway.services import Services

log = logging.getLogger("gateway.answer.pipeline")

CANCEL_GRACE_S = 5.0  # how long a cancelled or timed-out runtime gets to stop by itself
_DECLINE_RE = re.compile(
    r"\b(?:do(?:es)? not (?:cover|contain|mention|say|include|provide)"
    r"|not (?:covered|mentioned|provided|specified|found) in|no information"
    r"|cannot (?:find|answer)|can't (?:find|answer)|unable to (?:find|answer))",
    re.IGNORECASE)


def chain_of(runtime: Any) -> dict[str, Any] | None:
    try:
        chain: dict[str, Any] = runtime.describe().to_dict()
        return chain
    except Exception as exc:  # noqa: BLE001 - an answer does not fail for want of a description
        log.warning("runtime.describe() failed: %s", exc)
        return None


def generate(gw: Services, res: AnswerResult, given: list[Hit], cancel: threading.Event,
              max_tokens: int | None, t0: float, evidence: str
              ) -> Generator[Text, None, dict[str, Any] | None]:
    """Stream from the runtime into res; returns the artifact chain JSON (None if never loaded)."""
    settings = gw.settings.answer
    tl = time.perf_counter()
    try:
        profile = gw.profile
        res.profile = profile.name
        config = profile.generation_config()
        runtime = gw.runtime  # loads on the first answer: load_ms, not pipeline overhead
        res.timings["load_ms"] = elapsed_ms(tl)
    except Exception as exc:  # noqa: BLE001 - a runtime that cannot load must not lose the answer
        fallback(res, given, evidence, f"runtime could not load: {exc}")
        res.timings["total_ms"] = elapsed_ms(t0)
        return None
    chain = chain_of(runtime)
    res.chain_id = chain["chain_id"] if chain else None
    cap = settings.max_answer_tokens
    config.max_tokens = max(1, min(max_tokens or config.max_tokens, cap))
    config.timeout_s = min(config.timeout_s, settings.timeout_s)
    tp = time.perf_counter()
    try:
        plan = fit_prompt(res.question, given, runtime.count_tokens, runtime.context_length,
                          config.max_tokens)
    except Exception as exc:  # noqa: BLE001
        fallback(res, given, evidence, f"prompt could not be built: {exc}")
        res.timings["total_ms"] = elapsed_ms(t0)
        return chain
    config.max_tokens = plan.max_tokens
    if settings.constrain_citations and plan.hits and getattr(runtime, "accepts_grammar", False):
        config.grammar = citation_grammar(len(plan.hits))
    res.generation_config = config.to_dict()
    res.flags.extend(plan.flags)
    for p in res.passages[: len(plan.hits)]:
        p["given"] = True
    res.timings.update(prompt_ms=elapsed_ms(tp), prompt_tokens_planned=plan.prompt_tokens)

    pieces: list[str] = []
    stats: Any = None
    failure: str | None = None
    crash: str | None = None
    timed_out = False
    deadline = time.monotonic() + config.timeout_s
    fences = FenceFilter()  # what streams is what is kept: no echoed <passage> tags, even briefly
    for kind, value in _pump(gw, runtime, plan.messages, config, cancel, deadline, res):
        if kind == "text":
            if not pieces:
                res.timings["ttft_ms"] = elapsed_ms(t0)
            pieces.append(value)
            shown = fences.feed(value)
            if shown:
                yield Text(shown)
        elif kind == "stats":
            stats = value
        elif kind == "error":
            failure = value
        elif kind == "crash":
            crash = failure = value
        elif kind == "timeout":
            timed_out = True
    tail = fences.flush()
    if tail:
        yield Text(tail)
    res.draft = "".join(pieces)
    res.answer = strip_echoed_fences(res.draft)
    if stats is not None:
        res.timings.update(prompt_tokens=stats.prompt_tokens, output_tokens=stats.output_tokens,
                           runtime_ttft_ms=stats.ttft_ms, decode_tps=stats.decode_tps,
                           generation_ms=stats.total_ms, stop_reason=stats.stop_reason)
        timed_out = timed_out or stats.stop_reason == "timeout"
        if stats.stop_reason == "length":  # cut at max_tokens: the reader must know it is unfinished
            res.flags.append("cut_at_max_tokens")
        if stats.stop_reason == "error" and failure is None:
            failure = "the runtime reported an error"
    if "ttft_ms" in res.timings and res.timings.get("runtime_ttft_ms") is not None:
        t = res.timings  # question to first token, less what is not the pipeline's own work
        own = t["ttft_ms"] - t["embed_ms"] - t["runtime_ttft_ms"] - t.get("queue_ms", 0) - t["load_ms"]
        t["overhead_ms"] = round(own, 3)
    if timed_out:
        res.flags.append("timeout")
        failure = failure or f"generation timed out after {config.timeout_s:g} s"
    if crash is not None:  # the worker died: this answer is an error, its evidence still shown
        fallback(res, given, evidence, crash)
        res.outcome = "error"
        res.flags.append("backend_crashed")
        res.timings["total_ms"] = elapsed_ms(t0)
        return chain
    if cancel.is_set() and not timed_out:
        res.outcome = "cancelled"
    elif failure is not None and not pieces:
        fallback(res, given, evidence, failure)
        res.timings["total_ms"] = elapsed_ms(t0)
        return chain
    elif failure is not None:
        res.outcome, res.error = "error", failure
    if res.outcome == "answered":
        _check_support(res, plan.hits, given, evidence, settings.min_support_overlap,
                       settings.require_question_terms)
    else:
        res.citations, flags = resolve(res.answer, plan.hits)
        res.flags.extend(flags)
    res.timings["total_ms"] = elapsed_ms(t0)
    return chain


def _check_support(res: AnswerResult, hits: list[Hit], given: list[Hit], evidence: str,
                   min_overlap: float, require_question_terms: bool) -> None:
    """Keep the sentences the cited passages back; with none left, show the evidence instead."""
    cited, dropped = validate(parse_citations(res.answer), len(hits))
    if dropped:
        res.flags.append(f"dropped_invalid_citations: {dropped}")
    if is_decline(res.answer) or (not cited and not dropped and _DECLINE_RE.search(res.answer)):
        res.flags.append("model_declined")
        use_evidence(res, given, evidence)
        return
    # A passage is read with its manual's title and section heading, as the model was shown it.
    checks = check_answer(res.answer, [f"{h.title}\n{h.heading}\n{h.text}" for h in hits], min_overlap,
                          question=res.question)
    res.support = [c.to_dict() for c in checks]
    unsupported = [c for c in checks if not c.supported]
    inferred = [c for c in checks if c.supported and c.inferred]
    if unsupported:
        res.flags.append(f"unsupported_sentences_removed: {len(unsupported)}")
    if inferred:
        res.flags.append(f"citations_inferred: {len(inferred)}")
    if len(unsupported) == len(checks):
        res.flags.append("no_supported_sentence")
        use_evidence(res, given, evidence)
        return
    shown = supported_text(res.answer, checks)
    titles = " ".join(sorted({h.title for h in hits}))
    if require_question_terms and not addresses_question(res.question, shown, titles):
        res.flags.append("answer_off_question")
        use_evidence(res, given, evidence)
        return
    res.answer = shown
    res.citations, flags = resolve(res.answer, hits, supporting_fallback=False)
    res.flags.extend(f for f in flags if not f.startswith("dropped_invalid_citations"))


def _pump(gw: Services, runtime: Any, messages: list[dict[str, str]], config: Any, cancel: threading.Event,
          deadline: float, res: AnswerResult) -> Iterator[tuple[str, Any]]:
    """Run runtime.stream in its own thread (holding the gateway's generation lock) and relay its
    items, so that a cancel or the deadline is noticed even while the runtime is silent.

    Yields ("text", str), ("stats", GenerationStats), ("error", message), ("crash", reason: the
    backend's worker process died) or ("timeout", None).
    """
    from runtimes.base import GenerationStats
    from runtimes.supervised import WorkerCrashed

    stop = threading.Event()  # what the runtime watches: set on cancel or timeout
    lock = getattr(gw, "generation_lock", None) or threading.Lock()
    tq = time.perf_counter()
    while not lock.acquire(timeout=0.05):
        if cancel.is_set():
            return
        if time.monotonic() > deadline:
            yield "error", "the runtime stayed busy with other answers until the timeout"
            yield "timeout", None
            return
    # the wait for the generation slot (pipeline) and for this lock are both queueing, not overhead
    res.timings["queue_ms"] = round(res.timings.get("queue_ms", 0.0) + elapsed_ms(tq), 3)
    items: queue.Queue[tuple[str, Any]] = queue.Queue()

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

    thread = threading.Thread(target=run, name=f"generate-{res.id}", daemon=True)
    thread.start()
    try:
        yield from _relay(items, runtime, stop, cancel, deadline)
    finally:  # also when the consumer is closed mid-stream: the runtime must stop
        if thread.is_alive():
            stop.set()
            _cancel_runtime(runtime)


def _cancel_runtime(runtime: Any) -> None:
    try:
        runtime.cancel()
    except Exception as exc:  # noqa: BLE001 - best effort; the stop event is the main signal
        log.warning("runtime.cancel() failed: %s", exc)


def _relay(items: queue.Queue[tuple[str, Any]], runtime: Any, stop: threading.Event,
           cancel: threading.Event, deadline: float) -> Iterator[tuple[str, Any]]:
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
