"""Issue 25, item 3: the prompt carries what answers, not five whole passages.

Prefill is most of the wait on a CPU; the excerpt keeps a passage's sentences that bear on the
question, in reading order, and the support check still holds the answer against the whole passage.
"""

from __future__ import annotations

from gateway.answer.prompting import excerpt, fit_prompt
from retrieval.types import Hit

FILLER = " ".join(f"Section {i} describes the packaging of accessory {i} in general terms." for i in range(30))
PASSAGE = (FILLER + " To flash the firmware, copy firmware.bin to the SD card. Then power the board on and wait "
           "one minute. " + FILLER)


def _hit(text: str, n: int) -> Hit:
    return Hit(chunk_id=f"c{n}", manual="m.pdf", title="Board manual", manual_sha256="0" * 64, page=n,
               heading="Firmware", text=text, score=1.0, dense_rank=n, lexical_rank=n, dense_score=0.8)


def words(text: str) -> int:
    return len(text.split())


def test_the_excerpt_keeps_the_sentences_that_answer_in_reading_order() -> None:
    cut = excerpt("How do I flash the firmware?", PASSAGE, 300)
    assert "copy firmware.bin to the SD card" in cut
    assert "Then power the board on" in cut  # the step after it comes along
    assert cut.index("copy firmware.bin") < cut.index("Then power")
    assert cut.startswith("…") and cut.endswith("…") and len(cut) <= 300 + 10
    assert "packaging of accessory 3 " not in cut


def test_a_short_passage_or_no_budget_is_given_whole() -> None:
    short = "Copy firmware.bin to the SD card."
    assert excerpt("How do I flash the firmware?", short, 300) == short
    assert excerpt("How do I flash the firmware?", PASSAGE, 0) == PASSAGE


def test_a_passage_without_the_questions_words_is_cut_from_its_start() -> None:
    cut = excerpt("What torque for the hinge bolts?", PASSAGE, 200)
    assert cut.startswith("Section 0") and cut.endswith("…") and len(cut) <= 210


def test_excerpts_make_the_prompt_smaller_and_keep_the_whole_hits() -> None:
    hits = [_hit(PASSAGE, n) for n in range(1, 4)]
    whole = fit_prompt("How do I flash the firmware?", hits, words, 8192, 256)
    cut = fit_prompt("How do I flash the firmware?", hits, words, 8192, 256, excerpt_chars=300)
    assert len(cut.hits) == len(whole.hits) == 3
    assert cut.prompt_tokens < whole.prompt_tokens / 3
    assert cut.hits[0].text == PASSAGE  # the support check reads the whole passage
    assert "copy firmware.bin" in cut.messages[1]["content"]
