"""`max_tokens` caps an extractive answer too (issue 48, item 8e), on /api/v1/ask and /v1.

Extractive mode has no model to count tokens with: the quoted evidence keeps whole sentences while it
stays within about max_tokens tokens (gateway.answer.extractive.approx_tokens), never cuts a citation
off its sentence, and says it was cut (flag `cut_at_max_tokens`; /v1's `finish_reason` "length").
A first sentence longer than the cap alone keeps its opening words, then "…" and its citation.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.answer.citations import CITATION_RE
from gateway.answer.extractive import approx_tokens, cited_text
from gateway.web.openai_replies import EVIDENCE_NOTE
from tests.support.server import GatewayServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUESTION = "Is it OK to unplug a stepper motor from the SKR board while the printer is switched on?"
PICKED = [(1, "Never plug or unplug any device while the printer is powered."),
          (1, "• Stepper drivers are easily damaged by connecting motors while powered."),
          (3, "Check the wiring diagram on the following pages.")]


def test_approx_tokens_counts_about_four_characters_or_one_cjk_character() -> None:
    assert approx_tokens("") == 0
    assert approx_tokens("Unplug it") == 3  # 9 characters
    assert approx_tokens("断开电源") == 4


def test_whole_sentences_within_the_cap_each_with_its_citation() -> None:
    full, cut = cited_text(PICKED)
    assert not cut and full.count("[") == 3
    first = "Never plug or unplug any device while the printer is powered. [1]"
    text, cut = cited_text(PICKED, max_tokens=approx_tokens(first) + 5)
    assert (text, cut) == (first, True)
    two = first + "\n• Stepper drivers are easily damaged by connecting motors while powered. [1]"
    assert cited_text(PICKED, max_tokens=approx_tokens(two)) == (two, True)
    assert cited_text(PICKED, max_tokens=approx_tokens(full)) == (full, False)
    text, cut = cited_text(PICKED, max_tokens=6)  # shorter than the first sentence: its opening words
    assert cut and text.startswith("Never plug") and text.endswith(" … [1]") and approx_tokens(text) <= 6
    assert cited_text(PICKED, max_tokens=1)[0] == "Never … [1]"  # at least one word, and its citation


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("extractive-cap"),
                        config='[answer]\nmode = "extractive"\n[server]\nrate_limit_per_minute = 600\n')
    srv.start()
    yield srv
    srv.stop()


def _ask(server: GatewayServer, **extra: int) -> dict[str, Any]:
    r = httpx.post(server.url + "/api/v1/ask", json={"question": QUESTION, **extra}, timeout=120)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["outcome"] == "evidence_only" and body["mode"] == "extractive", body
    return body


def test_ask_and_v1_honour_max_tokens_in_extractive_mode(server: GatewayServer) -> None:
    full = _ask(server)
    text = full["answer"]
    assert "cut_at_max_tokens" not in full["flags"] and approx_tokens(text) > 40  # the cap below bites

    capped = _ask(server, max_tokens=40)
    answer = capped["answer"]
    assert approx_tokens(answer) <= 40 and text.startswith(answer), (answer, text)
    assert CITATION_RE.search(answer[-6:]), answer  # it ends with its citation, never mid-marker
    assert "cut_at_max_tokens" in capped["flags"]
    cited = {int(n) for n in CITATION_RE.findall(answer)}
    assert {c["n"] for c in capped["citations"]} == cited  # no card for a sentence that was cut away

    tiny = _ask(server, max_tokens=4)
    assert tiny["answer"].endswith(" … [1]") and [c["n"] for c in tiny["citations"]] == [1]

    def v1(**extra: int) -> dict[str, Any]:
        r = httpx.post(server.url + "/v1/chat/completions", timeout=120, json={
            "model": "manualqa", "messages": [{"role": "user", "content": QUESTION}], **extra})
        assert r.status_code == 200, r.text
        reply: dict[str, Any] = r.json()
        return reply

    done = v1(max_tokens=40)
    choice = done["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["content"].split("\n\nSources:\n")[0] == answer + EVIDENCE_NOTE
    assert v1(max_completion_tokens=40)["choices"][0]["finish_reason"] == "length"
    assert v1()["choices"][0]["finish_reason"] == "stop"
