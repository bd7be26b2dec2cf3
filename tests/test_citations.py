"""Citation parsing, validation against the passages given, and resolution to passage sentences."""

from __future__ import annotations

import pytest

from gateway.answer.citations import (
    parse_citation_groups,
    parse_citations,
    pdf_url,
    resolve,
    sentence_spans,
    validate,
)
from gateway.answer.cited_text import cited_text
from gateway.answer.extractive import pick_sentences
from ingest.text.sentences import continued_spans
from retrieval.types import Hit


def hit(n: int, text: str, page: int = 3) -> Hit:
    return Hit(chunk_id=f"c{n}", manual="m.pdf", title="Pump Manual", manual_sha256="ab" * 32, page=page,
               heading="", text=text, score=1.0 / n, dense_rank=n, lexical_rank=n, dense_score=0.5)


@pytest.mark.parametrize("text, expected", [
    ("Open the valve [2].", [2]),
    ("Open it [2, 3] then close [1].", [2, 3, 1]),
    ("See [2-4].", [2, 3, 4]),
    ("See [2–3].", [2, 3]),  # en dash, as models write it
    ("Both [2][3] say so [2].", [2, 3]),
    ("Spaces [ 4 ,5 ] are fine.", [4, 5]),
    ("Semicolons [1; 2] too.", [1, 2]),
    ("Not citations: [a], [2.5], [], array[i].", []),
    ("A silly range [1-9999] is not 9999 citations.", [1, 9999]),
    ("Reversed [3-1].", [3, 1]),
])
def test_parse_citations(text: str, expected: list[int]) -> None:
    assert parse_citations(text) == expected


def test_groups_keep_positions() -> None:
    text = "Do X [1]. Do Y [2, 3]."
    groups = parse_citation_groups(text)
    assert [text[s:e] for s, e, _ in groups] == ["[1]", "[2, 3]"]
    assert [g[2] for g in groups] == [[1], [2, 3]]


def test_validate_keeps_only_given_passages() -> None:
    assert validate([2, 7, 1, 0], 3) == ([2, 1], [7, 0])
    assert validate([], 3) == ([], [])


def test_sentence_spans_keep_trailing_citations_with_their_sentence() -> None:
    text = "Power off the board. [2] Then flash it [1].\n\n- first item\n- second item"
    sentences = [text[s:e] for s, e in sentence_spans(text)]
    assert sentences == ["Power off the board. [2]", "Then flash it [1].", "- first item", "- second item"]


def test_resolve_cites_sentences_that_support_the_claim() -> None:
    hits = [hit(1, "Unplug the printer before servicing. The nozzle reaches 250 C during printing. "
                   "Wear gloves when touching the hotend."),
            hit(2, "Firmware is flashed with an SD card. Copy firmware.bin to the card and reboot.", page=7)]
    answer = "Copy firmware.bin to the SD card and reboot the board [2]. The nozzle gets to 250 C [1]."
    citations, flags = resolve(answer, hits)
    assert flags == []
    by_n = {c.n: c for c in citations}
    assert set(by_n) == {1, 2}
    assert by_n[2].page == 7 and by_n[2].manual == "m.pdf" and by_n[2].title == "Pump Manual"
    assert by_n[2].sentences == ["Copy firmware.bin to the card and reboot."]
    assert by_n[1].sentences == ["The nozzle reaches 250 C during printing."]
    for c in citations:  # spans point into the passage text
        assert [c.passage[s:e] for s, e in c.spans] == c.sentences
        assert c.pdf_url == pdf_url("ab" * 32, c.page) == f"/api/v1/manuals/{'ab' * 32}/file#page={c.page}"
        assert not c.supporting


def test_resolve_drops_and_flags_invented_numbers() -> None:
    hits = [hit(1, "Torque the bolts to 12 Nm."), hit(2, "Use thread locker.")]
    citations, flags = resolve("Torque to 12 Nm [1] and see [7], [9].", hits)
    assert [c.n for c in citations] == [1]
    assert "dropped_invalid_citations: [7, 9]" in flags
    assert "no_valid_citation" not in flags


def test_no_valid_citation_attaches_closest_passage_as_supporting_and_says_so() -> None:
    hits = [hit(1, "Torque the bolts to 12 Nm."), hit(2, "Use thread locker.")]
    citations, flags = resolve("Torque them to 12 Nm [5].", hits)
    assert "no_valid_citation" in flags and "dropped_invalid_citations: [5]" in flags
    assert len(citations) == 1 and citations[0].supporting and citations[0].chunk_id == "c1"
    # an uncited answer that came from passage 2 points there, not at the top-ranked passage
    citations, _ = resolve("Apply blue thread locker before assembly.", hits)
    assert citations[0].supporting and citations[0].n == 2 and citations[0].chunk_id == "c2"
    assert citations[0].sentences == ["Use thread locker."]
    citations, _ = resolve("Nothing in common here.", hits)
    assert citations[0].n == 1  # no overlap at all: the top-ranked passage
    citations, flags = resolve("No brackets at all.", hits, supporting_fallback=False)
    assert citations == [] and flags == ["no_valid_citation"]
    citations, flags = resolve("Anything [1].", [])
    assert citations == [] and flags == ["dropped_invalid_citations: [1]", "no_valid_citation"]


def test_echoed_passage_tags_are_removed_from_answers() -> None:
    from gateway.answer.prompting import strip_echoed_fences

    raw = ('The answer is:\n<passage id=6 manual="Voron Guide" page="1">\nFlash it over USB [1].\n'
           "</passage>\n\n\n<PASSAGES>Done.")
    assert strip_echoed_fences(raw) == "The answer is:\n\nFlash it over USB [1].\n\nDone."
    assert strip_echoed_fences("Torque to 0.8 Nm [2] (see a < b > c).") == "Torque to 0.8 Nm [2] (see a < b > c)."


def test_a_sentence_that_points_back_is_quoted_with_the_one_before() -> None:
    text = ("工具默认没有 USB 功能。拨第 7 位拨码开关后重新上电。则工具才具有串口升级功能。其中 A 型号不支持。"
            "指示灯说明见下表。")
    spans = continued_spans(text, sentence_spans(text))
    assert [text[s:e] for s, e in spans] == [
        "工具默认没有 USB 功能。", "拨第 7 位拨码开关后重新上电。则工具才具有串口升级功能。其中 A 型号不支持。",
        "指示灯说明见下表。"]
    english = "Then press OK. This resets the board."  # "Then", "This" start a statement of their own
    assert continued_spans(english, sentence_spans(english)) == sentence_spans(english)
    for other in ("Alle Profile gleich lang sägen! Ansonsten in der Schreinerei berichtigen.",
                  "All GPIOs operate at 3.3 V. This means you should not connect 5 V signals."):
        assert continued_spans(other, sentence_spans(other)) == [(0, len(other))], other
    hits = [hit(1, text)]
    picked = pick_sentences("怎样让工具具有串口升级功能？", hits)
    assert picked[0] == (1, "拨第 7 位拨码开关后重新上电。则工具才具有串口升级功能。其中 A 型号不支持。"), picked
    citations, _flags = resolve(cited_text(picked)[0], hits)
    assert picked[0][1] in citations[0].sentences  # the whole statement, not its second half
