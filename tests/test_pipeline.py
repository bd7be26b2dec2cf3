"""The answer pipeline end to end on a real index of the sample manuals (real PDFs, FAISS, SQLite),
with the scripted test runtime standing in for the model: citations, the support check and
evidence_only, not_found, context fitting, extractive mode and fallback, failure, cancel, timeout,
concurrent logging, and the CLI."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gateway.answer import generation
from gateway.answer.events import Evidence, Final, Text, kind
from gateway.answer.outcome import DECLINED_TEXT
from gateway.answer.prompting import SYSTEM_PROMPT, fit_prompt
from gateway.config import Settings
from gateway.services import Services
from retrieval.types import Hit
from tests.support.scripted import ScriptedRuntime

FLASH_Q = "How do I flash the firmware onto the piston board?"
OFF_TOPIC_Q = "What tyre pressure does a 2015 Honda Civic need in winter?"


def scripted(**options: Any) -> ScriptedRuntime:
    rt = ScriptedRuntime("scripted.bin", options)
    rt.load()
    return rt


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, embedder: Any, sample_pdfs: list[Path]) -> Services:
    data = tmp_path_factory.mktemp("pipeline") / "data"
    g = Services(Settings(data_dir=data), embedder=embedder)  # one model load per session (conftest)
    g.settings.answer.mode = "generate"  # these tests are about the model's path (auto would need gate 4)
    g.ingest(sample_pdfs)
    yield g
    g.log.close()


def flash_n(gw: Services) -> int:
    """The number the pipeline gives the passage that says how to flash the piston board (the MSP-FET
    passage) for FLASH_Q: the ranking decides it, these tests are about what happens to a citation of it."""
    gw.runtime = scripted(script="Nothing to say.")
    res = gw.answer(FLASH_Q)
    return next(p["n"] for p in res.passages if "MSP-FET" in p["text"] and p.get("given"))


def test_answer_with_valid_citation_is_logged_with_provenance(gw: Services) -> None:
    n = flash_n(gw)
    rt = scripted(script=f"Use the MSP-FET emulation tool and run make flash [{n}].")
    gw.runtime = rt
    events = list(gw.answer_events(FLASH_Q, client="api", key_name="tech1"))
    kinds = [kind(e) for e in events]
    assert kinds[0] == "retrieval" and kinds[-1] == "final" and kinds.count("final") == 1
    assert kinds[1] == "evidence" and kinds.index("evidence") < kinds.index("text")  # evidence first
    evidence = events[1]
    assert isinstance(evidence, Evidence)
    assert evidence.citations and all(c["passage"] for c in evidence.citations)
    assert "".join(e.text for e in events if isinstance(e, Text)) == "".join(rt.pieces)
    res = events[-1].result
    assert res.outcome == "answered" and res.mode == "generate"
    # the one card is [1] whatever the passage's number among those given (issue 48, item 8a)
    assert res.answer == "Use the MSP-FET emulation tool and run make flash [1]."
    assert [(c.n, c.passage_n) for c in res.citations] == [(1, n)] and not res.citations[0].supporting
    cite = res.citations[0]
    cited = res.passages[n - 1]
    assert (cite.chunk_id, cite.page, cite.manual) == (cited["chunk_id"], cited["page"], cited["manual"])
    assert cite.manual == "noaa_lcp_pistonboard_user_manual.pdf"
    assert cite.pdf_url.endswith(f"/file#page={cite.page}") and cite.sentences
    assert res.index_version == gw.store.active_id()
    assert res.chain_id == rt.describe().chain_id
    # The model received the fenced passages; the system message is the fixed instruction.
    messages = rt.received[-1]
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert f'<passage id={n} manual="{cite.title}" page="{cite.page}"' in messages[1]["content"]
    assert FLASH_Q in messages[1]["content"]
    row = gw.log.get(res.id)
    assert row["outcome"] == "answered" and row["client"] == "api" and row["key_name"] == "tech1"
    assert row["index_version"] == res.index_version and row["chain_id"] == res.chain_id
    assert gw.log.chain(res.chain_id)["backend"] == "scripted"
    assert row["citations"][0]["page"] == cite.page
    assert [p["chunk_id"] for p in row["passages"]] == [p["chunk_id"] for p in res.passages]
    assert row["retrieval_ms"] > 0 and row["ttft_ms"] > 0 and row["output_tokens"] == len(rt.pieces)
    assert row["generation_config"]["max_tokens"] == gw.settings.answer.max_answer_tokens


def test_echoed_passage_tags_never_stream(gw: Services) -> None:
    """A small model copies prompt scaffolding; the technician must not see it flash past."""
    pieces = ["Use ", "<pass", 'age id=6 manual="NOAA', ' LCP" page="1">', "the MSP-FET", " tool and run make",
              " flash </passage", "> [1]."]
    gw.runtime = scripted(pieces=pieces)
    events = list(gw.answer_events(FLASH_Q))
    streamed = "".join(e.text for e in events if isinstance(e, Text))
    assert "<" not in streamed and "passage" not in streamed
    assert streamed == "Use the MSP-FET tool and run make flash  [1]."
    assert events[-1].result.draft == "".join(pieces)  # the log keeps what the model really wrote


def test_answer_cut_at_max_tokens_says_so(gw: Services) -> None:
    gw.runtime = scripted(script="Use the MSP-FET emulation tool and run make flash [1] then check the LED.")
    res = gw.answer(FLASH_Q, max_tokens=4)
    assert "cut_at_max_tokens" in res.flags


def test_invalid_citations_are_dropped_and_missing_ones_flagged(gw: Services) -> None:
    n = flash_n(gw)
    gw.runtime = scripted(script=f"Run make flash [{n}] as shown in [17].")
    res = gw.answer(FLASH_Q)
    assert [(c.n, c.passage_n) for c in res.citations] == [(1, n)]
    assert "dropped_invalid_citations: [17]" in res.flags
    # Uncited: a passage given that backs it is attached as an inferred citation (and flagged).
    gw.runtime = scripted(script="Use the MSP-FET emulation tool and run make flash.")
    res = gw.answer(FLASH_Q)
    assert res.outcome == "answered" and "citations_inferred: 1" in res.flags
    assert res.answer.endswith("]") and len(res.citations) == 1 and not res.citations[0].supporting
    assert "citations_inferred: 1" in gw.log.get(res.id)["flags"]


def test_a_miscited_sentence_is_cited_to_its_passage_only_when_configured(gw: Services) -> None:
    n = flash_n(gw)
    wrong = 2 if n == 1 else 1  # a passage given that does not say it
    gw.runtime = scripted(script=f"Use the MSP-FET emulation tool and run make flash [{wrong}].")
    res = gw.answer(FLASH_Q)
    assert res.outcome == "evidence_only" and "no_supported_sentence" in res.flags  # the default: off
    gw.settings.answer.recite_citations = True
    try:
        res = gw.answer(FLASH_Q)
    finally:
        gw.settings.answer.recite_citations = False
    assert res.outcome == "answered" and "citations_corrected: 1" in res.flags
    assert res.answer.endswith("[1]") and [(c.n, c.passage_n) for c in res.citations] == [(1, n)]
    assert "citations_corrected: 1" in gw.log.get(res.id)["flags"]


def test_unsupported_sentences_are_removed_and_the_draft_is_kept(gw: Services) -> None:
    n = flash_n(gw)
    draft = (f"Use the MSP-FET emulation tool and run make flash [{n}]. "
             f"Then plug in the 12 V USB-C power adapter from www.example.com [{n}].")
    gw.runtime = scripted(script=draft)
    res = gw.answer(FLASH_Q)
    assert res.outcome == "answered" and res.answer == "Use the MSP-FET emulation tool and run make flash [1]."
    assert "unsupported_sentences_removed: 1" in res.flags and res.draft == draft
    assert [s["supported"] for s in res.support] == [True, False]
    row = gw.log.get(res.id)
    assert row["draft"] == draft and row["support"][1]["reason"] in ("number", "code")


def test_answer_with_no_supported_sentence_shows_the_evidence_not_the_guess(gw: Services) -> None:
    gw.runtime = scripted(script="Flash it with a 2.10 Nm torque driver via USB-C [1].")
    events = list(gw.answer_events(FLASH_Q))
    res = events[-1].result
    evidence = next(e for e in events if isinstance(e, Evidence))
    assert res.outcome == "evidence_only" and "no_supported_sentence" in res.flags
    assert res.answer == evidence.text and "2.10" not in res.answer
    assert res.citations and not any(c.supporting for c in res.citations)
    top = res.passages[0]  # the evidence comes from the top retrieved passages, not the guess
    assert any(c.chunk_id == top["chunk_id"] for c in res.citations)
    assert gw.log.get(res.id)["outcome"] == "evidence_only"


class GrammarRuntime(ScriptedRuntime):
    accepts_grammar = True


def test_backend_that_takes_a_grammar_is_constrained_to_the_passages_given(gw: Services) -> None:
    rt = GrammarRuntime("scripted.bin", {"script": "Run make flash [1]."})
    rt.load()
    gw.runtime = rt
    res = gw.answer(FLASH_Q)
    given = sum(1 for p in res.passages if p["given"])
    grammar = rt.configs[-1].grammar
    assert f'"{given}"' in grammar and f'"{given + 1}"' not in grammar
    assert res.generation_config["grammar"] == grammar
    plain = scripted(script="Run make flash [1].")  # a backend without grammars gets none
    gw.runtime = plain
    gw.answer(FLASH_Q)
    assert plain.configs[-1].grammar == ""


def test_weak_evidence_is_not_found_without_asking_the_model(gw: Services) -> None:
    rt = scripted(script="Invented answer [1].")
    gw.runtime = rt
    res = gw.answer(OFF_TOPIC_Q)
    assert res.outcome == "not_found" and rt.received == []
    assert "do not cover" in res.answer and res.passages  # the nearest passages are still shown
    assert res.citations == []
    assert gw.log.get(res.id)["outcome"] == "not_found"


def test_model_that_declines_shows_the_evidence_or_not_found_as_configured(gw: Services) -> None:
    gw.runtime = scripted(script="The manuals do not cover this.")
    res = gw.answer(FLASH_Q)  # answer.decline = "evidence", chosen on eval/dev
    assert res.outcome == "evidence_only" and "model_declined" in res.flags and res.citations
    gw.settings.answer.decline = "not_found"
    try:
        res = gw.answer(FLASH_Q)
    finally:
        gw.settings.answer.decline = "evidence"
    assert res.outcome == "not_found" and "model_declined" in res.flags
    assert res.answer == DECLINED_TEXT and res.passages  # the nearest passages are still listed
    assert res.draft == "The manuals do not cover this."
    assert gw.log.get(res.id)["outcome"] == "not_found"


def test_tiny_context_drops_lowest_ranked_passages_and_never_overflows(gw: Services) -> None:
    rt = scripted(script="Run make flash [1].", context_length=700)
    gw.runtime = rt
    res = gw.answer(FLASH_Q)
    given = [p for p in res.passages if p["given"]]
    assert given and len(given) < len(res.passages)
    assert given == res.passages[: len(given)]  # a prefix: the lowest-ranked went first
    assert any(f.startswith("passages_dropped_to_fit") for f in res.flags)
    prompt_tokens = sum(rt.count_tokens(m["content"]) for m in rt.received[-1])
    assert prompt_tokens + rt.configs[-1].max_tokens <= rt.context_length


def test_the_model_reads_the_top_passages_as_excerpts(gw: Services) -> None:
    rt = scripted(script="Run make flash [1].")
    gw.runtime = rt
    settings = gw.settings.answer
    keep = (settings.prompt_passages, settings.excerpt_chars)
    try:
        settings.prompt_passages, settings.excerpt_chars = 2, 200
        res = gw.answer(FLASH_Q)
        prompt = rt.received[-1][1]["content"]
        assert "<passage id=2" in prompt and "<passage id=3" not in prompt
        assert [p["given"] for p in res.passages[:3]] == [True, True, False]
        settings.prompt_passages, settings.excerpt_chars = 2, 0
        gw.answer(FLASH_Q)
        assert len(rt.received[-1][1]["content"]) > len(prompt)  # whole passages are longer
    finally:
        settings.prompt_passages, settings.excerpt_chars = keep


def _hit(n: int, words: int) -> Hit:
    return Hit(chunk_id=f"c{n}", manual="m.pdf", title="T", manual_sha256="0" * 64, page=n, heading="",
               text=" ".join(f"w{n}x{i}" for i in range(words)), score=1 / n, dense_rank=n,
               lexical_rank=None, dense_score=0.5)


@pytest.mark.parametrize("context", [260, 300, 400, 1000, 5000])
def test_fit_prompt_budget(context: int) -> None:
    def count(s: str) -> int:
        return len(s.split())

    hits = [_hit(1, 60), _hit(2, 60), _hit(3, 60), _hit(4, 600)]
    plan = fit_prompt("How far?", hits, count, context, max_tokens=64)
    rendered = sum(count(m["content"]) for m in plan.messages)
    assert rendered <= plan.prompt_tokens <= context - plan.max_tokens
    assert plan.hits == hits[: len(plan.hits)]
    if context == 260:  # only a cut version of the top passage fits
        assert plan.truncated and plan.hits == hits[:1] and "w1x0" in plan.messages[1]["content"]
    if context == 5000:
        assert plan.hits == hits and plan.dropped == 0


def test_fit_prompt_refuses_a_window_smaller_than_the_question() -> None:
    from gateway.answer.prompting import PromptTooLong

    with pytest.raises(PromptTooLong, match="window is 100 tokens"):
        fit_prompt("How far?", [_hit(1, 10)], lambda s: len(s.split()), 100, max_tokens=64)


def test_extractive_mode_needs_no_model(gw: Services) -> None:
    rt = scripted()
    gw.runtime = rt
    res = gw.answer(FLASH_Q, mode="extractive")
    assert res.outcome == "evidence_only" and res.mode == "extractive" and rt.received == []
    assert res.citations and all(not c.supporting for c in res.citations)
    assert all(1 <= c.n <= 5 for c in res.citations) and "flash" in res.answer.lower()
    assert res.chain_id is None  # no model took part


def test_runtime_that_cannot_load_falls_back_to_extractive(gw: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Any) -> Any:
        raise RuntimeError("libllama.so: cannot open shared object file")

    monkeypatch.setattr(Services, "runtime", property(broken))
    res = gw.answer(FLASH_Q)
    assert res.outcome == "evidence_only" and res.mode == "extractive_fallback"
    assert "cannot open shared object" in res.error and "runtime_failed" in res.flags
    row = gw.log.get(res.id)
    assert row["mode"] == "extractive_fallback" and "cannot open shared object" in row["error"]


def test_generation_error_before_text_falls_back_after_text_is_error(gw: Services) -> None:
    gw.runtime = scripted(script="Run make flash now please [1].", fail_after=0)
    res = gw.answer(FLASH_Q)
    assert res.mode == "extractive_fallback" and res.outcome == "evidence_only" and "scripted failure" in res.error
    gw.runtime = scripted(script="Run make flash now please [1].", fail_after=3)
    res = gw.answer(FLASH_Q)
    assert res.outcome == "error" and "scripted failure" in res.error and res.answer == "Run make flash"
    assert gw.log.get(res.id)["outcome"] == "error"


def test_cancel_ends_cancelled_and_logged(gw: Services) -> None:
    rt = scripted(script=" ".join(["word"] * 200), token_delay_s=0.02)
    gw.runtime = rt
    cancel = threading.Event()
    events = gw.answer_events(FLASH_Q, cancel=cancel)
    texts = 0
    final = None
    for e in events:
        if isinstance(e, Text):
            texts += 1
            if texts == 3:
                cancel.set()
        if isinstance(e, Final):
            final = e.result
    assert final.outcome == "cancelled" and texts < 10
    assert gw.log.get(final.id)["outcome"] == "cancelled"
    # A consumer that goes away mid-stream (client disconnect) cancels the same way.
    gen = gw.answer_events(FLASH_Q)
    first_text = next(e for e in gen if isinstance(e, Text))
    assert first_text.text
    gen.close()
    newest = gw.log.query(limit=1)[0]
    assert newest["outcome"] == "cancelled" and "consumer_closed" in newest["flags"]
    # the runtime stops at its next piece and releases the slot (polled: 60 s bounds a hang)
    assert gw.generation_lock.acquire(timeout=60)
    gw.generation_lock.release()


class SilentRuntime(ScriptedRuntime):
    """A runtime that hangs in prefill and ignores cancel: the pipeline must not hang with it."""

    release = threading.Event()
    finished = False

    def stream(self, messages: Any, config: Any, cancel: Any = None) -> Any:
        self.received.append(messages)
        self.release.wait(60)
        self.finished = True
        yield from ()


def test_timeout_never_hangs(gw: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 s: the scripted first piece (50 ms) comes before the deadline however busy the box
    monkeypatch.setattr(gw.settings.answer, "timeout_s", 2.0)
    monkeypatch.setattr(generation, "CANCEL_GRACE_S", 0.3)  # where the give-up is read (pipeline only re-exports it)
    gw.runtime = scripted(script=" ".join(["slow"] * 100), token_delay_s=0.05)
    res = gw.answer(FLASH_Q)
    assert "timeout" in res.flags and res.outcome == "error" and res.answer.startswith("slow")
    rt = SilentRuntime("silent.bin", {})
    rt.load()
    gw.runtime = rt
    try:
        res = gw.answer(FLASH_Q)  # nothing streamed before the timeout: extractive fallback
        assert rt.received and not rt.finished  # it returned while the runtime was still stuck
        assert "timeout" in res.flags and res.mode == "extractive_fallback" and res.outcome == "evidence_only"
        assert "did not stop" in res.error
    finally:
        rt.release.set()
    assert gw.generation_lock.acquire(timeout=60)  # the abandoned stream gives the slot back
    gw.generation_lock.release()


def test_concurrent_answers_give_one_row_each(gw: Services) -> None:
    gw.runtime = scripted(script="Run make flash [1].")
    before = gw.log.count()
    n = 50
    results: list[Any] = []
    lock = threading.Lock()
    barrier = threading.Barrier(n)

    def ask(i: int) -> None:
        barrier.wait()
        r = gw.answer(FLASH_Q if i % 2 else OFF_TOPIC_Q, client="replay")
        with lock:
            results.append(r)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == n
    assert gw.log.count() - before == n
    ids = {r.id for r in results}
    assert len(ids) == n
    assert {r["id"] for r in gw.log.query(client="replay", limit=1000)} >= ids


def test_cli_ask_json_and_log_show(gw: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.cli import main

    monkeypatch.setenv("MANUALQA_DATA", str(gw.settings.data_dir))
    runner = CliRunner()
    out = runner.invoke(main, ["ask", "How do I flash the firmware?", "--extractive", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["outcome"] == "evidence_only" and data["index_version"] == gw.store.active_id()
    assert data["citations"] and data["citations"][0]["page"] >= 1
    text = runner.invoke(main, ["ask", "How do I flash the firmware?", "--extractive"])
    assert text.exit_code == 0
    first = data["citations"][0]
    assert f"{first['title']} p.{first['page']}" in text.output  # each source: manual title and page
    assert text.output.startswith(data["answer"]) and data["answer"].strip()  # the evidence is printed
    show = runner.invoke(main, ["log", "show", data["id"], "--json"])
    assert show.exit_code == 0, show.output
    shown = json.loads(show.output)
    assert shown["index"]["id"] == data["index_version"] and shown["index"]["available"]
    assert shown["index"]["manuals"] and shown["citations"] == data["citations"]
    listing = runner.invoke(main, ["log", "--outcome", "evidence_only", "--limit", "3"])
    assert data["id"] in listing.output
    exported = runner.invoke(main, ["log", "export", "--format", "jsonl"])
    assert data["id"] in exported.output
    missing = runner.invoke(main, ["log", "show", "NOPE"])
    assert missing.exit_code != 0 and "no answer" in missing.output
    bad = runner.invoke(main, ["log", "--since", "last tuesday"])
    assert bad.exit_code != 0 and "since" in bad.output


def test_quantity_no_passage_states_is_not_found_without_the_model(gw: Services) -> None:
    """On-topic (the right manual is found) yet unanswerable: neither sample manual states a humidity."""
    rt = scripted(script="Humidity 0 to 95 % [1].")
    gw.runtime = rt
    res = gw.answer("What operating humidity range is the piston board rated for?")
    assert res.outcome == "not_found" and rt.received == []
    assert "quantity_not_in_evidence: humidity" in res.flags and "humidity" in res.answer
    assert res.passages and res.passages[0]["manual"] == "noaa_lcp_pistonboard_user_manual.pdf"
    assert gw.log.get(res.id)["outcome"] == "not_found"
    # A quantity the passages do state goes on to the model as before.
    res = gw.answer("What input voltage range does the piston board accept?")
    assert len(rt.received) == 1 and not any(f.startswith("quantity_not") for f in res.flags)
    # ...and its "0 to 95 %" is stated by no passage, but the quoted evidence gives the voltage: shown
    assert res.outcome == "evidence_only" and "values_not_in_passages" not in res.flags
    gw.settings.answer.quantity_check = False  # the operator's switch
    try:
        res = gw.answer("What operating humidity range is the piston board rated for?")
        assert len(rt.received) == 2 and not any(f.startswith("quantity_not") for f in res.flags)
    finally:
        gw.settings.answer.quantity_check = True


def test_cli_ask_takes_the_api_mode(gw: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """`manualqa ask --mode` is the API's `mode` field (issue 50: the offline proof asks with --mode generate,
    since the default auto answers extractively until gate 4 is passed)."""
    from gateway.cli import main

    monkeypatch.setenv("MANUALQA_DATA", str(gw.settings.data_dir))
    runner = CliRunner()
    by_mode = runner.invoke(main, ["ask", "How do I flash the firmware?", "--mode", "extractive", "--json"])
    assert by_mode.exit_code == 0, by_mode.output
    data = json.loads(by_mode.output)
    assert data["mode"] == "extractive" and data["outcome"] == "evidence_only"
    both = runner.invoke(main, ["ask", "How do I flash the firmware?", "--mode", "generate", "--extractive"])
    assert both.exit_code == 2 and "contradict" in both.output
    wrong = runner.invoke(main, ["ask", "How do I flash the firmware?", "--mode", "creative"])
    assert wrong.exit_code == 2 and "creative" in wrong.output
