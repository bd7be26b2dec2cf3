"""The one answer function that the CLI, the HTTP API and replay all call: answer_events(deps, request).

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
``not_found`` when the evidence is too weak to show as an answer. A model that has not earned
generate mode (deps.unqualified: gate 4 not passed) never answers green, also when the question
itself asked for generate: its text is kept as a labelled draft and the evidence is shown.

Here: the order of the steps, retrieval, the evidence and the log. It runs on `AnswerDeps`
(gateway.answer.deps: a retriever, the model, an answer sink), never on the composition root; the
model's part (streaming, cancel and deadline) is gateway.answer.generation; whether the evidence can
be shown at all (and the not-found notice when not) is gateway.answer.evidence_strength; the outcome is
decided in one function, gateway.answer.outcome.decide_outcome; the result type is gateway.answer.result.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager

from gateway.answer.citations import renumber, resolve
from gateway.answer.cited_text import cited_text
from gateway.answer.coverage import named_elsewhere, named_first
from gateway.answer.deps import AnswerDeps, Model, Retrieved
from gateway.answer.events import AnswerEvent, Evidence, Final, Retrieval, Text
from gateway.answer.evidence_params import evidence_params
from gateway.answer.evidence_strength import (
    AGREE_RELIEF,
    CROSS_MIN_TERMS,
    NO_PASSAGE_TEXT,
    _weakness,
    evidence_is_strong,
)
from gateway.answer.extractive import pick_sentences, similarity_scorer
from gateway.answer.flags import AnswerFlag
from gateway.answer.generation import CANCEL_GRACE_S, Generation, chain_of, generate
from gateway.answer.outcome import Decision, decide_outcome, settle
from gateway.answer.request import MAX_QUESTION_CHARS, AnswerRequest
from gateway.answer.result import AnswerInputError, AnswerResult, elapsed_ms, overhead_ms
from gateway.answer.support_check import SupportCheck, check_support
from gateway.stamps import new_id, utcnow
from ingest.text.languages import detect_question
from retrieval.types import CLOSEST, Hit

__all__ = ["AGREE_RELIEF", "CANCEL_GRACE_S", "CROSS_MIN_TERMS", "MAX_QUESTION_CHARS", "NO_PASSAGE_TEXT", "AnswerDeps",
           "AnswerInputError", "AnswerRequest", "AnswerResult", "answer", "answer_events", "evidence_is_strong"]

log = logging.getLogger(__name__)

# The generation slot: slot(cancel) is entered around generation; it yields False if cancelled first.
Slot = Callable[[threading.Event], AbstractContextManager[bool]]


def retrieve_for_answer(deps: AnswerDeps, query: str, manuals: Sequence[str] | None,
                        version: str | None) -> Retrieved:
    """The answer's retrieval: enough passages for the prompt, from one pinned index version."""
    return deps.retriever.retrieve(query, max(deps.search_k, deps.settings.max_passages), manuals or None, version)


def _sentence_similarity(similar: Callable[[list[str]], list[float]] | None, given: list[Hit], weight: float,
                         res: AnswerResult) -> Callable[[list[tuple[int, str]]], list[float]] | None:
    """The evidence's similarity score (extractive.similarity_scorer); if the embedder fails on the
    sentences, the words alone pick them, and the answer's flags say so."""
    if similar is None or weight <= 0:
        return None
    scorer = similarity_scorer(similar, given, weight)

    def guarded(candidates: list[tuple[int, str]]) -> list[float]:
        t0 = time.perf_counter()
        try:
            return scorer(candidates)
        except Exception:  # noqa: BLE001 - an embedder fault must not cost the evidence
            log.warning("sentence similarity failed; evidence picked by shared words alone", exc_info=True)
            res.flags.append(AnswerFlag("evidence_by_words_only"))
            return [0.0] * len(candidates)
        finally:  # embedding, like the query's: not the pipeline's own work (result.overhead_ms)
            res.timings["sentence_embed_ms"] = elapsed_ms(t0)

    return guarded


def answer(deps: AnswerDeps, request: AnswerRequest, *, cancel: threading.Event | None = None,
           slot: Slot | None = None) -> AnswerResult:
    """The same as answer_events(), consumed: the final AnswerResult."""
    result: AnswerResult | None = None
    for event in answer_events(deps, request, cancel=cancel, slot=slot):
        if isinstance(event, Final):
            result = event.result
    assert result is not None
    return result


def answer_events(deps: AnswerDeps, request: AnswerRequest, *, cancel: threading.Event | None = None,
                  slot: Slot | None = None) -> Iterator[AnswerEvent]:
    """The answer to one AnswerRequest as events (see the module docstring).

    `slot(cancel)` is held around generation only, the one step that needs the model: retrieval,
    the evidence, not-found and extractive answers never wait for it. It yields False when the
    cancel came while waiting. Without it (CLI, replay) the model's own turn is taken when
    generation begins (deps.model.turn: the same queue, a place that is never refused).
    """
    t0 = time.perf_counter()
    settings = deps.settings
    request = request.checked(settings.mode)
    cancel = cancel or threading.Event()
    res = AnswerResult(id=new_id(), time=utcnow(), question=request.question, scope=list(request.scope),
                       mode=request.mode_or(settings.mode), client=request.client, key_name=request.key_name)
    chain: dict[str, object] | None = None
    decision: Decision | None = None
    logged = False
    try:
        # 1. retrieve ---------------------------------------------------------------------------
        try:
            if request.query != request.question:
                res.flags.append(AnswerFlag("searched_with_conversation"))
            got = retrieve_for_answer(deps, request.query, request.scope, request.version)
            hits, rt, res.index_version = got.hits, got.timings, got.version
        except Exception as exc:  # noqa: BLE001 - every failure ends as a logged outcome
            decision = decide_outcome(retrieval_error=str(exc))
            settle(res, decision, given=[], evidence="")
            logged = True
            yield Final(_finish(deps, res, chain, t0))
            return
        res.timings.update(retrieval_ms=round(rt.get("total_ms", elapsed_ms(t0)), 3),
                           embed_ms=round(rt.get("embed_ms", 0.0), 3))
        language = detect_question(request.question)
        strong, ev = evidence_is_strong(hits, settings.min_similarity, rt.get(CLOSEST), language)
        if rt.get("named_hits"):  # searched among the manuals the question names (retrieval.named)
            named_titles = dict.fromkeys(h.title or h.manual for h in hits[: int(rt["named_hits"])])
            res.flags.append(AnswerFlag("searched_named_manuals", ", ".join(named_titles)))
        elif settings.coverage_check:  # the passages of a manual the question names lead (gateway.answer.coverage)
            hits, named = _named_first(request.question, hits, settings.max_passages)
            if named:
                res.flags.append(AnswerFlag("named_manual_first", named))
        res.timings["best_similarity"] = ev["best_similarity"]
        given = hits[: settings.max_passages]
        res.passages = [{**h.to_dict(), "n": i + 1, "given": False} for i, h in enumerate(hits)]
        yield Retrieval(id=res.id, index_version=res.index_version,
                        passages=[h.to_dict() for h in given], evidence=ev)
        res.profile, chain = _profile_name(deps.model), _loaded_chain(deps.model)
        res.chain_id = _chain_id(chain)
        # 2. cancelled, or weak evidence: say so, with the nearest passages; the model is not asked
        weak = _weakness(request.question, given, strong, ev, settings)
        if cancel.is_set() or weak is not None:
            decision = decide_outcome(cancelled=cancel.is_set(), weak=weak)
            settle(res, decision, given=given, evidence="")
            if decision.shows == "notice":
                yield Text(res.answer)
            logged = True
            yield Final(_finish(deps, res, chain, t0))
            return
        # 3. the evidence, at once: the best sentences of the passages, each cited --------------
        # (a request's max_tokens caps the quoted text too: no model counts it, approx_tokens does)
        params = evidence_params(settings, language)  # how it is picked and its passages quoted, once per answer
        evidence, evidence_cut = cited_text(pick_sentences(
            res.question, given, params,
            extra=_sentence_similarity(got.similar, given, settings.sentence_similarity, res)), request.max_tokens)
        ev_citations, _ = resolve(evidence, given, supporting_fallback=False, params=params)
        res.timings["evidence_ms"] = elapsed_ms(t0)
        yield Evidence(text=renumber(evidence, ev_citations), citations=[c.to_dict() for c in ev_citations])
        gen: Generation | None = None
        support: SupportCheck | None = None
        if res.mode == "extractive":
            res.chain_id, chain = None, None  # no model took part
            decision = decide_outcome(extractive=True)
        else:
            # 4. generate, holding the generation slot, and check what the model wrote ----------
            tq = time.perf_counter()
            with (slot(cancel) if slot is not None else deps.model.turn(cancel)) as running:
                res.timings["queue_ms"] = elapsed_ms(tq)
                if running and not cancel.is_set():
                    gen = yield from generate(deps.model, settings, res.question, given, cancel,
                                              request.max_tokens, t0, res.id)
            if gen is not None:
                chain = _take(res, gen, chain)
                if gen.clean:
                    support = check_support(res.question, gen.text, gen.hits, settings.min_support_overlap,
                                            settings.require_question_terms, evidence=evidence,
                                            decline=settings.decline,
                                            recite_citations=settings.recite_citations)
            decision = decide_outcome(cancelled=gen is None, generation=gen, support=support,
                                      unqualified=deps.unqualified)
        settle(res, decision, given=given, evidence=evidence, generation=gen, support=support, params=params)
        if evidence_cut and decision.shows == "evidence" and "cut_at_max_tokens" not in res.flags:
            # the quoted evidence is the answer, cut at the request's max_tokens
            res.flags.append(AnswerFlag("cut_at_max_tokens"))
        logged = True
        yield Final(_finish(deps, res, chain, t0))
    except (GeneratorExit, KeyboardInterrupt):  # the consumer went away (disconnect, Ctrl-C): a cancel
        cancel.set()
        if logged:  # it left after the final event: nothing to undo
            raise
        if decision is None:
            settle(res, decide_outcome(closed=True), given=[], evidence="")
        _finish(deps, res, chain, t0, durable=False)  # nobody is left to see it
        raise


def _named_first(question: str, hits: list[Hit], n: int) -> tuple[list[Hit], str | None]:
    """The hits with the given n re-ordered so that a manual the question names leads; the word that
    names it, or None when nothing moved."""
    head = named_first(question, hits[:n])
    if [h.chunk_id for h in head] == [h.chunk_id for h in hits[:n]]:
        return hits, None
    named = named_elsewhere(question, hits[:n])
    return head + hits[n:], named[0] if named else None


def _profile_name(model: Model) -> str | None:
    try:
        return model.profile.name
    except Exception as exc:  # noqa: BLE001 - reported again (and fallen back) if generation needs it
        log.warning("no deployment profile: %s", exc)
        return None


def _chain_id(chain: Mapping[str, object] | None) -> str | None:
    """An artifact chain's id (runtimes.base.ArtifactChain.chain_id, a str), None without a chain."""
    return str(chain["chain_id"]) if chain else None


def _loaded_chain(model: Model) -> dict[str, object] | None:
    """The loaded runtime's artifact chain: recorded even when the model is not asked."""
    runtime = model.runtime_if_loaded()
    return chain_of(runtime) if runtime is not None else None


def _take(res: AnswerResult, gen: Generation, chain: dict[str, object] | None) -> dict[str, object] | None:
    """What generation measured and used, into the result; returns the chain to log."""
    waited = res.timings.get("queue_ms", 0.0) + gen.timings.pop("queue_ms", 0.0)  # the slot's and the lock's
    res.timings.update(gen.timings)
    res.timings["queue_ms"] = round(waited, 3)
    res.flags.extend(gen.flags)
    res.generation_config, res.draft = gen.config, gen.draft
    for p in res.passages[: len(gen.hits)]:
        p["given"] = True
    if gen.chain is None:
        return chain
    res.chain_id = _chain_id(gen.chain)
    return gen.chain


def _finish(deps: AnswerDeps, res: AnswerResult, chain: dict[str, object] | None, t0: float,
            durable: bool = True) -> AnswerResult:
    """Stamp the total time, log the answer and return it; the final event goes out only once the
    row is committed.

    Tokens stream without waiting for the log; only the end does, so that every answer a client
    saw is in the log even if the server is killed right after (the writer batches commits).
    """
    res.timings["total_ms"] = elapsed_ms(t0)
    overhead = overhead_ms(res.timings)
    if overhead is not None:
        res.timings["overhead_ms"] = overhead
    try:
        deps.sink.record(res, chain=chain, durable=durable)
    except Exception as exc:  # noqa: BLE001 - the answer is still returned; the flag tells
        log.error("answer %s could not be logged: %s", res.id, exc)
        res.flags.append(AnswerFlag("not_logged"))
    return res
