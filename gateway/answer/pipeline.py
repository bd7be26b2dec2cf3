"""The one answer function that the CLI, the HTTP API and replay all call.

question -> retrieve from the (pinned) active index version -> weak evidence? not_found, no model
-> the evidence (best cited sentences, no model) at once -> prompt with fenced passages, fitted to
the window -> stream from the runtime (constrained to cite, where the backend takes a grammar) ->
check every sentence against the passage it cites -> one row in the answer log -> final event.

`answer_events()` yields {"type": "retrieval"}, {"type": "evidence"}, {"type": "text"} (many) and
exactly one {"type": "final", "result": AnswerResult}; `answer()` consumes it. Every path ends with
a final event and a log row: failure before any text falls back to the evidence, failure after
some text ends as "error", a cancel ends as "cancelled", and a runtime that stops responding is
abandoned at the timeout.

Outcomes: ``answered`` only when every sentence shown is backed by the passage it cites (the
model's unsupported sentences are removed, and kept in ``draft``); ``evidence_only`` when quoted
evidence is shown instead (extractive mode, a model that declined or wrote nothing supported);
``not_found`` when the evidence is too weak to show as an answer.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gateway.answer.citations import Citation, parse_citations, resolve, validate
from gateway.answer.extractive import extractive_answer
from gateway.answer.grammar import citation_grammar
from gateway.answer.prompting import FenceFilter, fit_prompt, strip_echoed_fences
from gateway.answer.quantities import unstated_quantities
from gateway.answer.support import addresses_question, check_answer, is_decline, supported_text
from gateway.errors import GatewayError
from gateway.records.answers import Outcome
from gateway.records.db import new_id, utcnow
from retrieval.types import Hit

if TYPE_CHECKING:
    from gateway.services import Services

log = logging.getLogger(__name__)

# The generation slot: slot(cancel) is entered around generation; it yields False if cancelled first.
Slot = Callable[[threading.Event], AbstractContextManager[bool]]

NOT_FOUND_TEXT = ("The manuals on this gateway do not cover this question. "
                  "The closest passages are listed below; they may not answer it.")
MAX_QUESTION_CHARS = 2000
AGREE_TOP = 3  # dense and lexical "agree" when one passage is in the top 3 of both
AGREE_RELIEF = 0.10  # ... and then a cosine this much below min_similarity still counts
CANCEL_GRACE_S = 5.0  # how long a cancelled or timed-out runtime gets to stop by itself
_DECLINE_RE = re.compile(
    r"\b(?:do(?:es)? not (?:cover|contain|mention|say|include|provide)"
    r"|not (?:covered|mentioned|provided|specified|found) in|no information"
    r"|cannot (?:find|answer)|can't (?:find|answer)|unable to (?:find|answer))",
    re.IGNORECASE)


class AnswerInputError(GatewayError):
    """The question itself cannot be answered as given (empty, too long): a 4xx, not a log row."""


@dataclass
class AnswerResult:
    id: str
    time: str
    question: str
    scope: list[str]
    answer: str = ""
    outcome: Outcome = "answered"
    mode: str = "generate"  # generate | extractive | extractive_fallback
    citations: list[Citation] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    passages: list[dict[str, Any]] = field(default_factory=list)  # retrieved hits (+ n, given)
    index_version: str | None = None
    chain_id: str | None = None
    profile: str | None = None
    generation_config: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    client: str = "cli"
    key_name: str | None = None
    draft: str = ""  # the model's text as generated; `answer` keeps its supported sentences
    support: list[dict[str, Any]] = field(default_factory=list)  # gateway.answer.support, one per sentence

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["citations"] = [c.to_dict() for c in self.citations]
        return data


def quantity_not_found_text(kinds: list[str]) -> str:
    """Not found, saying which value the passages lack (the technician sees what is missing)."""
    return (f"The closest passages in the manuals do not state a {' or '.join(kinds)} for this question. "
            "They are listed below; they may not answer it.")


def evidence_is_strong(hits: Sequence[Hit], min_similarity: float) -> tuple[bool, dict[str, Any]]:
    """Strong when the best cosine reaches min_similarity, or nearly so with dense and lexical agreeing."""
    if not hits:
        return False, {"best_similarity": None, "agree": False}
    best = max((h.dense_score or 0.0) for h in hits)
    agree = any(h.dense_rank is not None and h.lexical_rank is not None
                and h.dense_rank <= AGREE_TOP and h.lexical_rank <= AGREE_TOP for h in hits[:AGREE_TOP])
    strong = best >= min_similarity or (agree and best >= min_similarity - AGREE_RELIEF)
    return strong, {"best_similarity": round(best, 4), "agree": agree}


def _retrieve(gw: Services, question: str, manuals: list[str] | None,
              version: str | None) -> tuple[list[Hit], dict[str, float], str]:
    """Hits from one pinned index version (activation during an answer cannot mix versions)."""
    from retrieval.search import search_with_timings
    from retrieval.types import NoIndexError

    version = version or gw.store.active_id()
    if not version:
        raise NoIndexError("no active index version: ingest manuals first (manualqa ingest PATH)")
    s = gw.settings.search
    k = max(s.k, gw.settings.answer.max_passages)
    pick = getattr(gw, "embedder_for", None)  # the model this version was built with (Services)
    embedder = pick(version) if pick is not None else gw.embedder
    hits, timings = search_with_timings(gw.store, embedder, question, k=k, manuals=manuals or None,
                                        version=version, **s.search_options())
    show = getattr(gw, "show_titles", None)
    if show is not None:  # the admin's display titles (gateway.records.titles)
        show(hits)
    return hits, timings, version


def answer(gw: Services, question: str, **kwargs: Any) -> AnswerResult:
    """The same as answer_events(), consumed: the final AnswerResult."""
    result = None
    for event in answer_events(gw, question, **kwargs):
        if event["type"] == "final":
            result = event["result"]
    assert result is not None
    return result


def answer_events(
    gw: Services,
    question: str,
    manuals: list[str] | None = None,
    client: str = "cli",
    key_name: str | None = None,
    mode: str | None = None,
    cancel: threading.Event | None = None,
    version: str | None = None,
    max_tokens: int | None = None,
    slot: Slot | None = None,
    search_query: str | None = None,
) -> Iterator[dict[str, Any]]:
    """The answer as events (see the module docstring).

    `search_query` (default: the question) is what retrieval searches for: a chat client's
    follow-up ("and the torque for it?") needs the conversation's earlier turns to find its page.

    `slot(cancel)` is held around generation only, the one step that needs the model: retrieval,
    the evidence, not-found and extractive answers never wait for it. It yields False when the
    cancel came while waiting. Without it (CLI, replay) generation runs at once.
    """
    t0 = time.perf_counter()
    if not isinstance(question, str) or not question.strip():
        raise AnswerInputError("the question is empty")
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise AnswerInputError(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    settings = gw.settings.answer
    mode = mode or settings.mode
    if mode not in ("generate", "extractive"):
        raise AnswerInputError("mode must be 'generate' or 'extractive'")
    cancel = cancel or threading.Event()
    res = AnswerResult(id=new_id(), time=utcnow(), question=question, scope=list(manuals or []),
                       mode=mode, client=client, key_name=key_name)
    chain: dict[str, Any] | None = None
    try:
        # 1. retrieve ---------------------------------------------------------------------------
        try:
            query = (search_query or question).strip()[: 2 * MAX_QUESTION_CHARS]
            if query != question:
                res.flags.append("searched_with_conversation")
            hits, rt, res.index_version = _retrieve(gw, query, manuals, version)
        except Exception as exc:  # noqa: BLE001 - every failure ends as a logged outcome
            res.outcome, res.error = "error", f"retrieval failed: {exc}"
            res.answer = f"Could not search the manuals: {exc}"
            res.timings["total_ms"] = _ms(t0)
            yield {"type": "final", "result": _finish(gw, res, chain)}
            return
        res.timings.update(retrieval_ms=round(rt.get("total_ms", _ms(t0)), 3),
                           embed_ms=round(rt.get("embed_ms", 0.0), 3))
        strong, ev = evidence_is_strong(hits, settings.min_similarity)
        res.timings["best_similarity"] = ev["best_similarity"]
        given = hits[: settings.max_passages]
        res.passages = [{**h.to_dict(), "n": i + 1, "given": False} for i, h in enumerate(hits)]
        yield {"type": "retrieval", "id": res.id, "index_version": res.index_version,
               "passages": [h.to_dict() for h in given], "evidence": ev}
        try:
            res.profile = gw.profile.name
        except Exception as exc:  # noqa: BLE001 - reported again (and fallen back) if generation needs it
            log.warning("no deployment profile: %s", exc)
        runtime = _loaded_runtime(gw)
        if runtime is not None:
            chain = _chain(runtime)
        res.chain_id = chain["chain_id"] if chain else None
        if cancel.is_set():
            res.outcome, res.timings["total_ms"] = "cancelled", _ms(t0)
            yield {"type": "final", "result": _finish(gw, res, chain)}
            return
        # 2. weak evidence: say so, with the nearest passages; the model is not asked ---------
        unstated = (unstated_quantities(res.question, (f"{h.heading}\n{h.text}" for h in given))
                    if strong and settings.quantity_check else [])
        if not strong or unstated:
            res.outcome = "not_found"
            res.answer = NOT_FOUND_TEXT if not strong else quantity_not_found_text(unstated)
            res.flags.append(f"weak_evidence: best similarity {ev['best_similarity']}" if not strong
                             else f"quantity_not_in_evidence: {', '.join(unstated)}")
            res.timings["total_ms"] = _ms(t0)
            yield {"type": "text", "text": res.answer}
            yield {"type": "final", "result": _finish(gw, res, chain)}
            return
        # 3. the evidence, at once: the best sentences of the passages, each cited --------------
        evidence = extractive_answer(res.question, given, max_sentences=settings.evidence_sentences)
        ev_citations, _ = resolve(evidence, given, supporting_fallback=False)
        res.timings["evidence_ms"] = _ms(t0)
        yield {"type": "evidence", "text": evidence, "citations": [c.to_dict() for c in ev_citations]}
        if mode == "extractive":
            _use_evidence(res, given, evidence)
            res.chain_id, chain = None, None  # no model took part
            yield {"type": "final", "result": _finish(gw, res, chain)}
            return
        # 4. generate, holding the generation slot ---------------------------------------------
        tq = time.perf_counter()
        with (slot(cancel) if slot is not None else nullcontext(True)) as running:
            res.timings["queue_ms"] = _ms(tq)
            if running and not cancel.is_set():
                chain = yield from _generate(gw, res, given, cancel, max_tokens, t0, evidence)
            else:
                res.outcome, res.timings["total_ms"] = "cancelled", _ms(t0)
        yield {"type": "final", "result": _finish(gw, res, chain)}
    except (GeneratorExit, KeyboardInterrupt):  # the consumer went away (disconnect, Ctrl-C): a cancel
        cancel.set()
        if getattr(res, "_logged", False):  # it left after the final event: nothing to undo
            raise
        if res.outcome == "answered":
            res.outcome = "cancelled"
            res.flags.append("consumer_closed")
        res.timings.setdefault("total_ms", _ms(t0))
        _finish(gw, res, chain, durable=False)  # nobody is left to see it
        raise


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _loaded_runtime(gw: Services) -> Any:
    loaded = getattr(gw, "runtime_if_loaded", None)
    return loaded() if callable(loaded) else None


def _chain(runtime: Any) -> dict[str, Any] | None:
    try:
        return runtime.describe().to_dict()
    except Exception as exc:  # noqa: BLE001 - an answer does not fail for want of a description
        log.warning("runtime.describe() failed: %s", exc)
        return None


def _use_evidence(res: AnswerResult, given: list[Hit], evidence: str) -> None:
    """Show the quoted evidence (cited sentences of the top passages) as such: evidence_only."""
    res.outcome, res.answer = "evidence_only", evidence
    for p in res.passages[: len(given)]:
        p["given"] = True
    res.citations, flags = resolve(evidence, given, supporting_fallback=False)
    if not res.citations and given:  # no sentence qualified: the top passage itself
        res.citations, _ = resolve("[1]", given[:1], supporting_fallback=False)
    res.flags.extend(f for f in flags if f != "no_valid_citation")


def _fallback(res: AnswerResult, given: list[Hit], evidence: str, why: str) -> None:
    """The runtime failed before any text: show the evidence and record why."""
    res.mode, res.error = "extractive_fallback", why
    res.flags.append("runtime_failed")
    log.warning("answer %s: generation unavailable, evidence only: %s", res.id, why)
    _use_evidence(res, given, evidence)


def _generate(gw: Services, res: AnswerResult, given: list[Hit], cancel: threading.Event,
              max_tokens: int | None, t0: float, evidence: str) -> Iterator[dict[str, Any]]:
    """Stream from the runtime into res; returns the artifact chain JSON (None if never loaded)."""
    settings = gw.settings.answer
    tl = time.perf_counter()
    try:
        profile = gw.profile
        res.profile = profile.name
        config = profile.generation_config()
        runtime = gw.runtime  # loads on the first answer: load_ms, not pipeline overhead
        res.timings["load_ms"] = _ms(tl)
    except Exception as exc:  # noqa: BLE001 - a runtime that cannot load must not lose the answer
        _fallback(res, given, evidence, f"runtime could not load: {exc}")
        res.timings["total_ms"] = _ms(t0)
        return None
    chain = _chain(runtime)
    res.chain_id = chain["chain_id"] if chain else None
    cap = settings.max_answer_tokens
    config.max_tokens = max(1, min(max_tokens or config.max_tokens, cap))
    config.timeout_s = min(config.timeout_s, settings.timeout_s)
    tp = time.perf_counter()
    try:
        plan = fit_prompt(res.question, given, runtime.count_tokens, runtime.context_length,
                          config.max_tokens)
    except Exception as exc:  # noqa: BLE001
        _fallback(res, given, evidence, f"prompt could not be built: {exc}")
        res.timings["total_ms"] = _ms(t0)
        return chain
    config.max_tokens = plan.max_tokens
    if settings.constrain_citations and plan.hits and getattr(runtime, "accepts_grammar", False):
        config.grammar = citation_grammar(len(plan.hits))
    res.generation_config = config.to_dict()
    res.flags.extend(plan.flags)
    for p in res.passages[: len(plan.hits)]:
        p["given"] = True
    res.timings.update(prompt_ms=_ms(tp), prompt_tokens_planned=plan.prompt_tokens)

    pieces: list[str] = []
    stats: Any = None
    failure: str | None = None
    timed_out = False
    deadline = time.monotonic() + config.timeout_s
    fences = FenceFilter()  # what streams is what is kept: no echoed <passage> tags, even briefly
    for kind, value in _pump(gw, runtime, plan.messages, config, cancel, deadline, res):
        if kind == "text":
            if not pieces:
                res.timings["ttft_ms"] = _ms(t0)
            pieces.append(value)
            shown = fences.feed(value)
            if shown:
                yield {"type": "text", "text": shown}
        elif kind == "stats":
            stats = value
        elif kind == "error":
            failure = value
        elif kind == "timeout":
            timed_out = True
    tail = fences.flush()
    if tail:
        yield {"type": "text", "text": tail}
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
    if cancel.is_set() and not timed_out:
        res.outcome = "cancelled"
    elif failure is not None and not pieces:
        _fallback(res, given, evidence, failure)
        res.timings["total_ms"] = _ms(t0)
        return chain
    elif failure is not None:
        res.outcome, res.error = "error", failure
    if res.outcome == "answered":
        _check_support(res, plan.hits, given, evidence, settings.min_support_overlap,
                       settings.require_question_terms)
    else:
        res.citations, flags = resolve(res.answer, plan.hits)
        res.flags.extend(flags)
    res.timings["total_ms"] = _ms(t0)
    return chain


def _check_support(res: AnswerResult, hits: list[Hit], given: list[Hit], evidence: str,
                   min_overlap: float, require_question_terms: bool) -> None:
    """Keep the sentences the cited passages back; with none left, show the evidence instead."""
    cited, dropped = validate(parse_citations(res.answer), len(hits))
    if dropped:
        res.flags.append(f"dropped_invalid_citations: {dropped}")
    if is_decline(res.answer) or (not cited and not dropped and _DECLINE_RE.search(res.answer)):
        res.flags.append("model_declined")
        _use_evidence(res, given, evidence)
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
        _use_evidence(res, given, evidence)
        return
    shown = supported_text(res.answer, checks)
    titles = " ".join(sorted({h.title for h in hits}))
    if require_question_terms and not addresses_question(res.question, shown, titles):
        res.flags.append("answer_off_question")
        _use_evidence(res, given, evidence)
        return
    res.answer = shown
    res.citations, flags = resolve(res.answer, hits, supporting_fallback=False)
    res.flags.extend(f for f in flags if not f.startswith("dropped_invalid_citations"))



def _pump(gw: Services, runtime: Any, messages: list[dict[str, str]], config: Any, cancel: threading.Event,
          deadline: float, res: AnswerResult) -> Iterator[tuple[str, Any]]:
    """Run runtime.stream in its own thread (holding the gateway's generation lock) and relay its
    items, so that a cancel or the deadline is noticed even while the runtime is silent.

    Yields ("text", str), ("stats", GenerationStats), ("error", message) or ("timeout", None).
    """
    from runtimes.base import GenerationStats

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
    res.timings["queue_ms"] = _ms(tq)
    items: queue.Queue[tuple[str, Any]] = queue.Queue()

    def run() -> None:
        try:
            for item in runtime.stream(messages, config, stop):
                items.put(("stats", item) if isinstance(item, GenerationStats) else ("text", item))
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


def _finish(gw: Services, res: AnswerResult, chain: dict[str, Any] | None, durable: bool = True) -> AnswerResult:
    """Log the answer and return it; the final event goes out only once the row is committed.

    Tokens stream without waiting for the log; only the end does, so that every answer a client
    saw is in the log even if the server is killed right after (the writer batches commits).
    """
    res._logged = True  # type: ignore[attr-defined] - not a field: never serialised
    try:
        gw.log.record(res, chain=chain, durable=durable)
    except Exception as exc:  # noqa: BLE001 - the answer is still returned; the flag tells
        log.error("answer %s could not be logged: %s", res.id, exc)
        res.flags.append("not_logged")
    return res
