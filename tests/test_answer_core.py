"""The answer core without a root: the pipeline on test doubles of its three dependencies (a retriever,
the model, an answer sink), the one outcome decision, the AnswerRequest's checks and the SSE wire
form of the typed events (the names and JSON the API always sent)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from gateway.answer.deps import AnswerDeps, Retrieved
from gateway.answer.events import Evidence, Final, Queue, Retrieval, Text, kind
from gateway.answer.generation import Generation
from gateway.answer.outcome import Weak, decide_outcome
from gateway.answer.pipeline import answer, answer_events
from gateway.answer.request import AnswerRequest
from gateway.answer.result import AnswerInputError, AnswerResult
from gateway.answer.support_check import SupportCheck
from gateway.config import AnswerSettings
from gateway.generation_queue import GenerationQueue
from gateway.web.bridge import sse_of
from retrieval.types import Hit
from tests.support.scripted import ScriptedRuntime

PASSAGE = ("To flash the firmware, connect the MSP-FET emulation tool to the piston board and run make flash. "
           "The LED blinks twice when the board is ready.")


def hit(n: int = 1, text: str = PASSAGE) -> Hit:
    return Hit(chunk_id=f"c{n}", manual="board.pdf", title="Piston board", manual_sha256="ab" * 32, page=n,
               heading="Flashing", text=text, score=1.0 / n, dense_rank=n, lexical_rank=n, dense_score=0.9)


class Shelf:
    """A retriever with fixed hits; it records what it was asked."""

    def __init__(self, hits: list[Hit]) -> None:
        self.hits, self.asked = hits, []

    def retrieve(self, query: str, k: int, manuals: Sequence[str] | None = None,
                 version: str | None = None) -> Retrieved:
        self.asked.append((query, k, manuals, version))
        return Retrieved(self.hits[:k], {"embed_ms": 1.0, "total_ms": 2.0}, version or "v1")


class Profile:
    name = "test"

    def generation_config(self) -> Any:
        from runtimes.base import GenerationConfig

        return GenerationConfig()


class Model:
    def __init__(self, script: str) -> None:
        self.runtime = ScriptedRuntime("scripted.bin", {"script": script})
        self.runtime.load()
        self.profile = Profile()
        self.generation_lock = threading.Lock()
        self.queue = GenerationQueue(queue_size=1)

    def turn(self, cancel: threading.Event | None = None) -> Any:
        return self.queue.turn(cancel)

    def runtime_if_loaded(self) -> Any:
        return self.runtime


class Sink:
    def __init__(self) -> None:
        self.rows: list[tuple[AnswerResult, bool]] = []

    def record(self, result: Any, chain: dict[str, Any] | None = None, durable: bool = False,
               timeout_s: float = 30.0) -> str:
        self.rows.append((result, durable))
        return str(result.id)


def deps(script: str = "Connect the MSP-FET emulation tool and run make flash [1].",
         hits: list[Hit] | None = None) -> AnswerDeps:
    return AnswerDeps(settings=AnswerSettings(mode="generate", min_similarity=0.3), retriever=Shelf(hits or [hit()]),
                      model=Model(script), sink=Sink())


def test_the_pipeline_runs_on_its_three_dependencies_and_logs_once() -> None:
    d = deps()
    events = list(answer_events(d, AnswerRequest(question="  How do I flash the piston board firmware? ",
                                                 scope=("board.pdf",), client="api", key_name="k1")))
    assert [kind(e) for e in events][:2] == ["retrieval", "evidence"] and kind(events[-1]) == "final"
    result = events[-1].result
    assert result.outcome == "answered" and result.answer.endswith("[1].") and result.chain_id
    assert (result.question, result.scope, result.client, result.key_name) == (
        "How do I flash the piston board firmware?", ["board.pdf"], "api", "k1")
    assert d.retriever.asked == [("How do I flash the piston board firmware?", 5, ("board.pdf",), None)]
    assert d.sink.rows == [(result, True)]  # one row, committed before the final event
    assert result.timings["retrieval_ms"] == 2.0 and result.timings["total_ms"] > 0  # stamped once, at the end


def test_a_consumer_that_leaves_is_logged_once_as_cancelled() -> None:
    d = deps(script=" ".join(["flash"] * 50))
    events = answer_events(d, AnswerRequest(question="How do I flash the piston board firmware?"))
    assert isinstance(next(events), Retrieval)
    events.close()
    (result, durable), = d.sink.rows
    assert result.outcome == "cancelled" and "consumer_closed" in result.flags and not durable


def test_extractive_mode_never_asks_the_model() -> None:
    d = deps()
    result = answer(d, AnswerRequest(question="How do I flash the piston board firmware?", mode="extractive"))
    assert result.outcome == "evidence_only" and result.chain_id is None and result.mode == "extractive"
    assert "MSP-FET" in result.answer and not result.generation_config


def wait_for_depth(d: AnswerDeps, depth: int) -> None:
    """Until `depth` answers hold or wait for the turn (60 s bounds a hang, not the box's speed)."""
    deadline = time.monotonic() + 60
    while d.model.queue.depth < depth and time.monotonic() < deadline:
        time.sleep(0.01)
    assert d.model.queue.depth == depth, "the answer did not queue behind the held turn"


def test_an_answer_without_a_web_slot_waits_its_turn_in_the_one_queue() -> None:
    """CLI, replay and bench answers take their turn from the same queue as web asks (issue 24):
    while another generation holds it, the answer waits, and its wait is booked as queue time."""
    d = deps()
    box: dict[str, AnswerResult] = {}
    with d.model.queue.turn():
        t = threading.Thread(target=lambda: box.update(r=answer(d, AnswerRequest(
            question="How do I flash the piston board firmware?"))))
        t.start()
        wait_for_depth(d, 2)
        time.sleep(0.4)
        assert "r" not in box, "the answer generated while another held the turn"
    t.join(60)
    assert box["r"].outcome == "answered" and box["r"].timings["queue_ms"] >= 350
    assert d.model.queue.depth == 0  # its place is given back


def test_a_cancel_while_waiting_for_the_turn_generates_nothing() -> None:
    d = deps()
    cancel = threading.Event()
    box: dict[str, AnswerResult] = {}
    with d.model.queue.turn():
        t = threading.Thread(target=lambda: box.update(r=answer(d, AnswerRequest(
            question="How do I flash the piston board firmware?"), cancel=cancel)))
        t.start()
        wait_for_depth(d, 2)  # it waits for the turn now (a fixed 0.3 s sleep raced its start)
        cancel.set()
        t.join(60)
    assert box["r"].outcome == "cancelled"
    assert "output_tokens" not in box["r"].timings and not box["r"].generation_config  # the model never ran
    assert d.model.queue.depth == 0


@pytest.mark.parametrize("request_, message", [
    (AnswerRequest(question="   "), "empty"),
    (AnswerRequest(question="x" * 2001), "longer"),
    (AnswerRequest(question="why?", mode="poetry"), "mode"),  # type: ignore[arg-type]
])
def test_a_request_that_cannot_be_answered_is_refused_before_anything_runs(request_: AnswerRequest,
                                                                           message: str) -> None:
    d = deps()
    with pytest.raises(AnswerInputError, match=message):
        list(answer_events(d, request_))
    assert d.retriever.asked == [] and d.sink.rows == []


def test_the_request_searches_with_the_conversation_when_given() -> None:
    r = AnswerRequest(question="and its torque?", search_query="the M3 screw  and its torque?").checked("generate")
    assert r.query == "the M3 screw  and its torque?" and r.mode == "generate"
    assert AnswerRequest(question=" q ").checked("extractive").query == "q"


def ran(**kw: Any) -> Generation:
    return Generation(chain={"chain_id": "c"}, draft="text", text="text", **kw)


@pytest.mark.parametrize("inputs, outcome, shows, fallback", [
    ({"retrieval_error": "disk"}, "error", "notice", False),
    ({"closed": True}, "cancelled", "nothing", False),
    ({"cancelled": True, "weak": Weak("n", "f")}, "cancelled", "nothing", False),
    ({"weak": Weak("n", "weak_evidence")}, "not_found", "notice", False),
    ({"extractive": True}, "evidence_only", "evidence", False),
    ({"generation": ran(crash="worker died")}, "error", "evidence", True),
    ({"generation": Generation(unavailable="no model")}, "evidence_only", "evidence", True),
    ({"generation": ran(cancelled=True)}, "cancelled", "model", False),
    ({"generation": Generation(failure="boom")}, "evidence_only", "evidence", True),
    ({"generation": ran(failure="boom")}, "error", "model", False),
    ({"generation": ran(), "support": SupportCheck(None, ["model_declined"], declined=True)}, "not_found", "notice",
     False),
    ({"generation": ran(), "support": SupportCheck(None, ["no_supported_sentence"])}, "evidence_only", "evidence",
     False),
    ({"generation": ran(), "support": SupportCheck("text [1].")}, "answered", "model", False),
])
def test_the_outcome_is_decided_in_one_place(inputs: dict[str, Any], outcome: str, shows: str,
                                             fallback: bool) -> None:
    d = decide_outcome(**inputs)
    assert (d.outcome, d.shows, d.fallback) == (outcome, shows, fallback)


def test_the_events_keep_their_sse_names_and_json() -> None:
    result = AnswerResult(id="a1", time="t", question="q", scope=[])
    assert sse_of(Text("to")) == {"event": "token", "data": '{"text": "to"}'}
    assert sse_of(Queue(ahead=2)) == {"event": "queue", "data": '{"ahead": 2}'}
    assert sse_of(Evidence(text="e [1]", citations=[{"n": 1}])) == {
        "event": "evidence", "data": '{"text": "e [1]", "citations": [{"n": 1}]}'}
    assert sse_of(Retrieval(id="a1", index_version="v1", passages=[{"page": 3}], evidence={"agree": True})) == {
        "event": "retrieval", "data": '{"id": "a1", "index_version": "v1", "passages": [{"page": 3}]}'}
    final = sse_of(Final(result))
    assert final["event"] == "final" and json.loads(final["data"]) == result.to_dict()
