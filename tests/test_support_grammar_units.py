"""A draft is checked in the units the citation grammar made it write (issue 25).

Under the grammar a sentence ends at its citation. Qwen2.5-Coder-1.5B, asked for the Ender 3's
filament diameter on eval/dev, wrote "... is 1.75mm, as stated in [1] (page 6). [2] (page 4) also
mentions ...": the grammar's sentences are "... as stated in [1]", "(page 6). [2]" and "(page 4) also
mentions ... [3]". Read as one run-on sentence, the right answer was thrown away as degenerate. And a
mcHF draft that used "[n]" as step numbers ("follow these steps: [1] Set the receiver to USB mode. [2]
...") was shown green with its one backed step; read in grammar units its announcement dangles.
"""

from __future__ import annotations

from gateway.answer.draft_units import draft_spans
from gateway.answer.empty_claims import about_the_text
from gateway.answer.generation import Generation
from gateway.answer.outcome import decide_outcome
from gateway.answer.support_check import check_support
from retrieval.types import Hit

FEEDING = ("2. Feeding\nThe Ender 3 uses 1.75 mm filament. Cut the end of the filament at an angle, "
           "press the extruder lever and push the filament through the extruder.")
DISPLAY = "Display\nThe nozzle diameter is 0.4 mm. Turn the knob to choose a menu item."
CALIBRATION = ("Extruder Calibration\nMeasure the distance from the entrance of the extruder to the mark "
               "made between the roll of filament and the extruder.")
QUESTION = "filament diameter for the ender 3 extruder"
DRAFT = ("The filament diameter for the Ender 3 extruder is 1.75mm, as stated in [1] (page 6). [2] (page 4) "
         "also mentions that the nozzle diameter is 0.4mm, but this is not relevant to the question about the "
         "filament diameter. [3] (page 16) provides a calibration method for the extruder, which includes "
         "measuring the distance from the entrance of the extruder to the mark made between the roll of "
         "filament and the extruder. [2] (page 4) also mentions that the nozzle diameter is 0.4mm, but this is "
         "not relevant to the question about the filament diameter. [3]")


def _hits(*texts: str) -> list[Hit]:
    return [Hit(chunk_id=f"c{i}", manual="ender3.pdf", title="Ender 3 Quick Start Guide", manual_sha256="0" * 64,
                page=6 + i, heading="", text=t, score=1.0 / (i + 1), dense_rank=i + 1, lexical_rank=i + 1,
                dense_score=0.5) for i, t in enumerate(texts)]


def _decide(question: str, draft: str, hits: list[Hit]) -> tuple[str, str]:
    support = check_support(question, draft, hits, 0.6, True)
    decision = decide_outcome(generation=Generation(draft=draft, text=draft, hits=hits), support=support)
    return decision.outcome, support.shown or ""


def test_a_draft_splits_where_the_grammar_ended_its_sentences() -> None:
    pieces = [DRAFT[s:e] for s, e in draft_spans(DRAFT)]
    assert pieces[0] == "The filament diameter for the Ender 3 extruder is 1.75mm, as stated in [1]"
    assert pieces[1] == "(page 6). [2]"  # the page note left over: no claim, passed over
    assert pieces[2].startswith("(page 4) also mentions")
    assert len(pieces) == 5


def test_the_right_answer_under_page_notes_is_shown_and_the_talk_about_sources_is_not() -> None:
    outcome, shown = _decide(QUESTION, DRAFT, _hits(FEEDING, DISPLAY, CALIBRATION))
    assert outcome == "answered"
    assert shown == "The filament diameter for the Ender 3 extruder is 1.75mm, as stated in [1]"


def test_a_page_note_is_no_claim_of_its_own() -> None:
    outcome, shown = _decide("What filament does the Ender 3 use?",
                             "The Ender 3 uses 1.75mm filament [1] (page 6).", _hits(FEEDING))
    assert (outcome, shown) == ("answered", "The Ender 3 uses 1.75mm filament [1]")
    # its number is no value the passage must hold ("6" is nowhere in it), and "1.75mm" is "1.75 mm"
    assert "6" not in FEEDING and "1.75mm" not in FEEDING


def test_a_bare_yes_stays_with_the_claim_it_introduces() -> None:
    draft = "Yes, [1] The Ender 3 uses 1.75 mm filament. [1]"
    assert [draft[s:e] for s, e in draft_spans(draft)] == [draft]


def test_steps_numbered_with_citations_leave_the_announcement_dangling() -> None:
    steps = ("Frequency calibration\nUse a known-accurate frequency reference such as WWV to calibrate "
             "the operating frequency of the radio. Feed the audio to a frequency counter.")
    other = "The ALC (Automatic Level Control) reduces the drive when the output is too high."
    draft = ("To calibrate the radio frequency against WWV, you need to follow these steps: [1] Set the receiver "
             "to USB mode. [2] Calibrate the radio's operating frequency using a known-accurate frequency "
             "reference such as WWV. [1]")
    pieces = [draft[s:e] for s, e in draft_spans(draft)]
    assert pieces[0].endswith("follow these steps: [1]")
    outcome, _ = _decide("How do I calibrate the radio frequency against WWV?", draft, _hits(steps, other))
    assert outcome == "evidence_only"  # one backed step of an announced procedure is not the answer


def test_a_sentence_that_opens_on_its_citation_and_a_verb_of_saying_talks_about_a_source() -> None:
    assert about_the_text("[2] also mentions that the nozzle diameter is 0.4mm. [3]")
    assert about_the_text("(page 4) also mentions that the nozzle diameter is 0.4mm.")
    assert not about_the_text("The nozzle diameter is 0.4 mm [2].")


def test_the_grammar_lets_a_model_number_its_steps_and_still_cite_each() -> None:
    from gateway.answer.grammar import DECLINE, citation_grammar
    from tests.support.gbnf import accepts

    g = citation_grammar(3)
    steps = ("To calibrate against WWV, follow these steps: [1]\n1. Set the receiver to USB mode. [2]\n"
             "2. Feed the audio to a frequency counter. [1]\n10) Adjust the calibration for a 1.000 kHz tone [3]")
    assert accepts(g, steps)
    assert accepts(g, "The printer uses 1.75 mm filament. [1] Cut the end at an angle [2]")
    assert accepts(g, DECLINE)
    assert not accepts(g, "1. Set the receiver to USB mode.\n2. Feed the audio to a counter. [1]")  # uncited step
    assert not accepts(g, "Set the receiver to USB mode. [4]")  # no passage 4 was given
    assert not accepts(g, "The printer uses 1.75 mm filament.")
    assert not accepts(g, "0. Set the receiver to USB mode. [1]")
    assert not accepts(g, "[1] Set the receiver to USB mode. [2]")  # a citation is no step number


def test_a_numbered_step_is_one_unit_with_its_number_inline_or_on_its_own_line() -> None:
    for sep in (" ", "\n"):
        draft = sep.join(["To calibrate, follow these steps: [1]", "1. Set the receiver to USB mode. [2]",
                          "2. Feed the audio to a counter. [1]", "It takes 5 V. [1]"])
        assert [draft[s:e] for s, e in draft_spans(draft)] == [
            "To calibrate, follow these steps: [1]", "1. Set the receiver to USB mode. [2]",
            "2. Feed the audio to a counter. [1]", "It takes 5 V. [1]"]
