"""The share of the question's words a passage holds (retrieval.term_coverage), and the counts behind it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from retrieval.term_coverage import question_terms, stem, term_coverage


@pytest.mark.parametrize(("word", "stemmed"), [
    ("adjusting", "adjust"), ("adjusted", "adjust"), ("batteries", "battery"), ("fuses", "fuse"),
    ("fuse", "fuse"), ("cables", "cable"), ("switches", "switch"), ("boxes", "box"), ("settings", "sett"),
    ("setting", "sett"), ("motors", "motor"), ("status", "status"), ("press", "press"), ("bus", "bus"),
    ("gas", "gas"), ("led", "led"), ("sing", "sing"),
])
def test_stem_strips_only_a_plain_ending_and_keeps_short_words(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


def test_question_terms_drop_function_words_and_keep_on_off_not() -> None:
    terms = question_terms("How do I turn OFF the heaters when the printer is not printing?")
    assert set(terms) == {"turn", "off", "heater", "printer", "not", "print"}
    assert terms["heater"] == "heaters"  # the word as typed is what the index counts


def rows(*texts: str) -> list[dict[str, Any]]:
    return [{"title": "Some Manual", "heading": "", "text": t} for t in texts]


def test_a_rare_word_held_counts_more_than_a_common_one() -> None:
    df = {"firmware": 500, "bootloader": 3}
    shares = term_coverage("firmware bootloader", rows("Update the firmware.", "The bootloader starts first."),
                           lambda words: {w: df.get(w, 0) for w in words}, 1000)
    rare, common = math.log(1 + 1000 / 4), math.log(1 + 1000 / 501)
    assert shares[1] == pytest.approx(rare / (rare + common))
    assert shares[0] == pytest.approx(common / (rare + common))
    assert shares[1] > 0.5 > shares[0]


def test_every_word_held_is_one_none_is_zero_and_endings_do_not_matter() -> None:
    def counts(words: list[str]) -> dict[str, int]:
        return dict.fromkeys(words, 10)

    q = "adjusting the belts tension"
    full, none = term_coverage(q, rows("Belt tension is adjusted with the idler.", "Power supply wiring."), counts, 100)
    assert full == pytest.approx(1.0) and none == 0.0
    assert term_coverage("what is it?", rows("Belt tension."), counts, 100) == [0.0]  # no content word
    assert term_coverage(q, [], counts, 100) == []


def test_the_index_counts_words_as_it_stems_them(sample_data_dir: Path) -> None:
    from retrieval.versions import IndexStore

    chunks = IndexStore(sample_data_dir).open().chunks
    df = chunks.term_doc_freqs(["motor", "motors", "stepper", "zzqxv", "x-stop"])
    assert df["stepper"] > 0 and df["zzqxv"] == 0
    assert df["motor"] == df["motors"] > 0  # porter stems both to one term
    assert df["x-stop"] == 0  # not a token: never sent to FTS5 as syntax
    assert 0 < max(df.values()) <= chunks.row_total()
