"""The one answer function that the CLI, the HTTP API and replay all call.

question -> retrieve from the (pinned) active index version -> weak evidence? not_found, no model
-> the evidence (best cited sentences, no model) at once -> prompt with fenced passages, fitted to
the window -> stream from the runtime (constrained to cite, where the backend takes a grammar) ->
check every sentence against the passage it cites -> one row in the answer log -> final event.

`answer_events()` yields the typed events of gateway.answer.events: Retrieval, Evidence, Text (many)
and exactly one Final (the logged AnswerResult); `answer()` consumes it. Every path ends with
a final event and a log row: failure before any text falls back to the evidence, failure after
some text ends as "error", a cancel ends as "cancelled", and a runtime that stops responding is
abandoned at the timeout.

Outcomes: ``answered`` only when every sentence shown is backed by the passage it cites (the
model's unsupported sentences are removed, and kept in ``draft``); ``evidence_only`` when quoted
evidence is shown instead (extractive mode, a model that declined or wrote nothing supported);
``not_found`` when the evidence is too weak to show as an answer.

Here: retrieval, the not-found decision, the evidence and the log; the model's part (streaming,
cancel and deadline, the support check) is gateway.answer.generation; the result type and the
evidence fallbacks are gateway.answer.result.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from gateway.answer.citations import resolve
from gateway.answer.events import AnswerEvent, Evidence, Final, Retrieval, Text
from gateway.answer.extractive import extractive_answer
from gateway.answer.generation import CANCEL_GRACE_S, chain_of, generate
from gateway.answer.quantities import unstated_quantities
from gateway.answer.request import MAX_QUESTION_CHARS, AnswerRequest
from gateway.answer.result import AnswerInputError, AnswerResult, elapsed_ms, use_evidence
from gateway.records.db import new_id, utcnow
from retrieval.types import Hit

__all__ = ["AGREE_RELIEF", "CANCEL_GRACE_S", "MAX_QUESTION_CHARS", "AnswerInputError", "AnswerRequest",
           "AnswerResult", "answer", "answer_events", "evidence_is_strong"]

if TYPE_CHECKING:
    from gateway.services import Services

log = logging.getLogger(__name__)

# The generation slot: slot(cancel) is entered around generation; it yields False if cancelled first.
Slot = Callable[[threading.Event], AbstractContextManager[bool]]

NOT_FOUND_TEXT = ("The manuals on this gateway do not cover this question. "
                  "The closest passages are listed below; they may not answer it.")
AGREE_TOP = 3  # dense and lexical "agree" when one passage is in the top 3 of both
AGREE_RELIEF = 0.10  # ... and then a cosine this much below min_similarity still counts


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
    reranker = getattr(gw, "reranker", None)
    hits, timings = search_with_timings(gw.store, embedder, question, k=k, manuals=manuals or None,
                                        version=version, reranker=reranker, **s.search_options())
    show = getattr(gw, "show_titles", None)
    if show is not None:  # the admin's display titles (gateway.records.titles)
        show(hits)
    return hits, timings, version


def answer(gw: Services, request: AnswerRequest, *, cancel: threading.Event | None = None,
           slot: Slot | None = None) -> AnswerResult:
    """The same as answer_events(), consumed: the final AnswerResult."""
    result: AnswerResult | None = None
    for event in answer_events(gw, request, cancel=cancel, slot=slot):
        if isinstance(event, Final):
            result = event.result
    assert result is not None
    return result


def answer_events(gw: Services, request: AnswerRequest, *, cancel: threading.Event | None = None,
                  slot: Slot | None = None) -> Iterator[AnswerEvent]:
    """The answer to one AnswerRequest as events (see the module docstring).

    `slot(cancel)` is held around generation only, the one step that needs the model: retrieval,
    the evidence, not-found and extractive answers never wait for it. It yields False when the
    cancel came while waiting. Without it (CLI, replay) generation runs at once.
    """
    t0 = time.perf_counter()
    settings = gw.settings.answer
    request = request.checked(settings.mode)
    question, manuals, mode, version = request.question, list(request.scope), request.mode, request.version
    max_tokens = request.max_tokens
    cancel = cancel or threading.Event()
    res = AnswerResult(id=new_id(), time=utcnow(), question=question, scope=manuals,
                       mode=mode or settings.mode, client=request.client, key_name=request.key_name)
    chain: dict[str, Any] | None = None
    try:
        # 1. retrieve ---------------------------------------------------------------------------
        try:
            query = request.query
            if query != question:
                res.flags.append("searched_with_conversation")
            hits, rt, res.index_version = _retrieve(gw, query, manuals, version)
        except Exception as exc:  # noqa: BLE001 - every failure ends as a logged outcome
            res.outcome, res.error = "error", f"retrieval failed: {exc}"
            res.answer = f"Could not search the manuals: {exc}"
            res.timings["total_ms"] = elapsed_ms(t0)
            yield Final(_finish(gw, res, chain))
            return
        res.timings.update(retrieval_ms=round(rt.get("total_ms", elapsed_ms(t0)), 3),
                           embed_ms=round(rt.get("embed_ms", 0.0), 3))
        strong, ev = evidence_is_strong(hits, settings.min_similarity)
        res.timings["best_similarity"] = ev["best_similarity"]
        given = hits[: settings.max_passages]
        res.passages = [{**h.to_dict(), "n": i + 1, "given": False} for i, h in enumerate(hits)]
        yield Retrieval(id=res.id, index_version=res.index_version,
                        passages=[h.to_dict() for h in given], evidence=ev)
        try:
            res.profile = gw.profile.name
        except Exception as exc:  # noqa: BLE001 - reported again (and fallen back) if generation needs it
            log.warning("no deployment profile: %s", exc)
        runtime = _loaded_runtime(gw)
        if runtime is not None:
            chain = chain_of(runtime)
        res.chain_id = chain["chain_id"] if chain else None
        if cancel.is_set():
            res.outcome, res.timings["total_ms"] = "cancelled", elapsed_ms(t0)
            yield Final(_finish(gw, res, chain))
            return
        # 2. weak evidence: say so, with the nearest passages; the model is not asked ---------
        unstated = (unstated_quantities(res.question, (f"{h.heading}\n{h.text}" for h in given))
                    if strong and settings.quantity_check else [])
        if not strong or unstated:
            res.outcome = "not_found"
            res.answer = NOT_FOUND_TEXT if not strong else quantity_not_found_text(unstated)
            res.flags.append(f"weak_evidence: best similarity {ev['best_similarity']}" if not strong
                             else f"quantity_not_in_evidence: {', '.join(unstated)}")
            res.timings["total_ms"] = elapsed_ms(t0)
            yield Text(res.answer)
            yield Final(_finish(gw, res, chain))
            return
        # 3. the evidence, at once: the best sentences of the passages, each cited --------------
        evidence = extractive_answer(res.question, given, max_sentences=settings.evidence_sentences)
        ev_citations, _ = resolve(evidence, given, supporting_fallback=False)
        res.timings["evidence_ms"] = elapsed_ms(t0)
        yield Evidence(text=evidence, citations=[c.to_dict() for c in ev_citations])
        if mode == "extractive":
            use_evidence(res, given, evidence)
            res.chain_id, chain = None, None  # no model took part
            yield Final(_finish(gw, res, chain))
            return
        # 4. generate, holding the generation slot ---------------------------------------------
        tq = time.perf_counter()
        with (slot(cancel) if slot is not None else nullcontext(True)) as running:
            res.timings["queue_ms"] = elapsed_ms(tq)
            if running and not cancel.is_set():
                chain = yield from generate(gw, res, given, cancel, max_tokens, t0, evidence)
            else:
                res.outcome, res.timings["total_ms"] = "cancelled", elapsed_ms(t0)
        yield Final(_finish(gw, res, chain))
    except (GeneratorExit, KeyboardInterrupt):  # the consumer went away (disconnect, Ctrl-C): a cancel
        cancel.set()
        if getattr(res, "_logged", False):  # it left after the final event: nothing to undo
            raise
        if res.outcome == "answered":
            res.outcome = "cancelled"
            res.flags.append("consumer_closed")
        res.timings.setdefault("total_ms", elapsed_ms(t0))
        _finish(gw, res, chain, durable=False)  # nobody is left to see it
        raise


def _loaded_runtime(gw: Services) -> Any:
    loaded = getattr(gw, "runtime_if_loaded", None)
    return loaded() if callable(loaded) else None


def _finish(gw: Services, res: AnswerResult, chain: dict[str, Any] | None, durable: bool = True) -> AnswerResult:
    """Log the answer and return it; the final event goes out only once the row is committed.

    Tokens stream without waiting for the log; only the end does, so that every answer a client
    saw is in the log even if the server is killed right after (the writer batches commits).
    """
    res._logged = True  # type: ignore[attr-defined]  # not a field: never serialised
    try:
        gw.log.record(res, chain=chain, durable=durable)
    except Exception as exc:  # noqa: BLE001 - the answer is still returned; the flag tells
        log.error("answer %s could not be logged: %s", res.id, exc)
        res.flags.append("not_logged")
    return res
