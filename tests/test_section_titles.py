"""Section titles glued into a passage's text are not quoted as evidence (gateway.answer.section_titles).

eval/dev2's FreeDV and DSView guides put a subsection's number and title on the line of its first
sentence ("2.3.2.2 Icom Radio Configuration If using an Icom radio, ..."), or a one-word title on a
line of its own ("2.9.3 Open"); the evidence quoted them as if they were part of the answer."""

from __future__ import annotations

import pytest

from gateway.answer.extractive import extractive_answer
from gateway.answer.section_titles import is_heading, past_glued_title
from retrieval.types import Hit


def _rest(text: str) -> str:
    return text[past_glued_title(text, 0, len(text)):]


@pytest.mark.parametrize(("line", "sentence"), [
    ("2.3.2.2 Icom Radio Configuration If using an Icom radio, Hamlib uses the default address.",
     "If using an Icom radio, Hamlib uses the default address."),
    ("2.3.1.1 Receive Only (One Sound Card) For this setup, you need one sound card.",
     "For this setup, you need one sound card."),
    ("1.2.3 Removal of the Cover Take the four screws out.", "Take the four screws out."),
])
def test_a_deeply_numbered_title_on_the_sentences_line_is_passed(line: str, sentence: str) -> None:
    assert _rest(line) == sentence


@pytest.mark.parametrize("line", [
    "1.2.3 Connect the red wire to terminal 3.",  # no title: the sentence itself follows the number
    "1.2.3 The Fuse is rated 5 A.",  # "The Fuse" could be a title or the sentence: left whole
    "2.3 Icom Radio Configuration If using an Icom radio",  # two levels: a value ("3.3 V") looks like that
    "Icom Radio Configuration If using an Icom radio",  # no number
])
def test_where_the_title_ends_is_not_guessed(line: str) -> None:
    assert _rest(line) == line


def test_a_one_word_title_counts_only_under_a_deep_section_number() -> None:
    assert is_heading("2.9.3 Open")
    assert not is_heading("3.3 V") and not is_heading("2.5 Overview") and not is_heading("Open")


def test_the_evidence_starts_with_the_sentence_not_its_title() -> None:
    text = ("Test the radio's PTT with the rigctl program.\n2.3.2.2 Icom Radio Configuration If using an Icom "
            "radio, Hamlib uses the radio's default CI-V address when connecting.\n2.9.3 Open\nThe CI-V address "
            "configured in FreeDV must match the address configured in the radio.")
    hit = Hit(chunk_id="c1", manual="freedv.pdf", title="FreeDV User Guide", manual_sha256="0" * 64, page=9,
              heading="CAT/PTT Configuration", text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.5)
    answer = extractive_answer("which CI-V address does hamlib use for an icom radio?", [hit])
    assert "2.3.2.2" not in answer and "Icom Radio Configuration" not in answer and "2.9.3" not in answer
    assert "If using an Icom radio, Hamlib uses the radio's default CI-V address" in answer


@pytest.mark.parametrize("text", [
    "Im Bereich «Geburtstage\n» können bis zu fünf Termine im Format MM-DD hinterlegt werden.",
    "Open the menu „Einstellungen\n“ and select the LED type there.",
    "The jumper (JP3\n) must be closed for flashing the board.",
])
def test_a_line_broken_inside_a_quotation_is_no_title(text: str) -> None:
    """eval/de-dev3's wordclock Anleitung breaks "Im Bereich «Geburtstage" before its closing guillemet: the
    first line was passed as a title and the answer quoted "» können bis zu fünf Termine ..."."""
    from gateway.answer.section_titles import past_title_lines

    assert past_title_lines(text, 0, len(text)) == 0
    # a title on its own line is still passed
    titled = "INSTALLING THE WATER CHILLER\nFill the chiller with water."
    assert titled[past_title_lines(titled, 0, len(titled)):] == "Fill the chiller with water."
