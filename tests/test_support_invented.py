"""A value from nowhere ends `not_found`, not "here is the evidence" (issue 25, unanswerable questions).

Qwen2.5-Coder-1.5B, asked on eval/dev for the VGA resolution of a board whose manual gives none,
wrote "320x240 pixels [1]"; asked for a driver's Vref on a build the manual never sets up, "3.3V and
0.6A". The support check removed both sentences, and the answer ended `evidence_only`: the
technician was shown passages as though the value were somewhere in them. When nothing the model
wrote is backed and no passage it was given states any of its values, the outcome is `not_found`.
A value that some passage does state (under a wrong citation, or about something else) is a misread,
and the evidence is shown as before.
"""

from __future__ import annotations

from gateway.answer.generation import Generation
from gateway.answer.outcome import INVENTED_TEXT, decide_outcome
from gateway.answer.support_check import check_support, invented_values
from retrieval.types import Hit

VGA = ("RVPC is a low-cost educational computer with a RISC-V processor: keyboard input, VGA display "
       "output and audio output. VGA takes three GPIOs: Vsync, Hsync and RGB.")
CHILLER = "Change the water of the chiller after one year of normal use, or 6 months of intensive usage."


def _hit(text: str, n: int = 1, heading: str = "Overview") -> Hit:
    return Hit(chunk_id=f"c{n}", manual="board.pdf", title="RVPC user manual", manual_sha256="0" * 64, page=n,
               heading=heading, text=text, score=1.0, dense_rank=n, lexical_rank=n, dense_score=0.9)


def _decide(question: str, answer: str, hits: list[Hit]) -> tuple[str, str, list[str]]:
    support = check_support(question, answer, hits, 0.6, True)
    decision = decide_outcome(generation=Generation(draft=answer, text=answer, hits=hits), support=support)
    return decision.outcome, decision.notice, support.flags


def test_a_value_no_passage_states_is_not_found() -> None:
    outcome, notice, flags = _decide("What VGA resolution does the RVPC output?",
                                     "The VGA resolution of the RVPC output is 320x240 pixels. [1]", [_hit(VGA)])
    assert outcome == "not_found" and notice == INVENTED_TEXT and "values_not_in_passages" in flags


def test_a_value_another_passage_states_shows_the_evidence() -> None:
    # 320 is in passage 2: the model cited the wrong one or misread; the evidence holds what it read
    hits = [_hit(VGA), _hit("The monitor program draws 320 characters per screen.", 2, "Monitor")]
    outcome, _, flags = _decide("What VGA resolution does the RVPC output?",
                                "The VGA resolution of the RVPC output is 320x240 pixels. [1]", hits)
    assert outcome == "evidence_only" and "values_not_in_passages" not in flags


def test_a_spelled_out_value_counts_as_stated() -> None:
    # "1 year" is unsupported word for word, but the passage states it: not a value from nowhere
    assert not invented_values("coolant change interval for the chiller",
                               "Change the coolant every 1 year. [1]", [_hit(CHILLER)])
    assert invented_values("coolant change interval for the chiller",
                           "Change the coolant every 2 years. [1]", [_hit(CHILLER)])


def test_the_questions_own_numbers_are_not_claims() -> None:
    # "24V" comes from the question; the draft adds no value of its own
    assert not invented_values("Board stays dead on my 24V injector", "It does not work on 24V. [1]", [_hit(VGA)])


def test_a_backed_answer_with_a_stray_value_stays_answered() -> None:
    outcome, _, flags = _decide("Which signals does VGA use on the RVPC?",
                                "VGA takes three GPIOs: Vsync, Hsync and RGB. [1] It runs at 75 Hz. [1]",
                                [_hit(VGA)])
    assert outcome == "answered" and "values_not_in_passages" not in flags


def test_a_how_to_question_is_never_refused_for_its_numbers() -> None:
    # the steps of a procedure carry numbers of their own (a step count, a hold time) the passages may not
    hits = [_hit(VGA)]
    answer = "Hold the button for 5 seconds, then release it. [1]"
    assert invented_values("What is the reset hold time of the RVPC?", answer, hits)
    assert not invented_values("How do I reset the RVPC?", answer, hits)
    outcome, _, flags = _decide("How do I reset the RVPC?", answer, hits)
    assert outcome == "evidence_only" and "values_not_in_passages" not in flags


AGON = ("Pin. 2 is 5V power supply connected to USB-C +5V signal, you can power the board from this signal "
        "if the USB-C is not connected.")


def test_numbers_in_sentences_off_the_question_are_babble_not_claims() -> None:
    # SmolLM2 on eval/dev: "MagSafe 2019 ... Premium 500" for a question the quoted evidence answers
    question = "Powering the Agon through GPIO pin 2 - can the USB-C stay connected?"
    babble = "The AgonLight2 user manual can be summarized as follows. MagSafe 2019 [1] Premium 500 [1]"
    assert not invented_values(question, babble, [_hit(AGON)])
    outcome, _, flags = _decide(question, babble, [_hit(AGON)])
    assert outcome == "evidence_only" and "values_not_in_passages" not in flags
    # the same values, said as the answer to the question, are claims
    assert invented_values(question, "The USB-C can stay connected up to 2019 mA. [1]", [_hit(AGON)])


def test_a_value_with_its_sign_dropped_is_a_misread_not_an_invention() -> None:
    # Qwen2.5-Coder-0.5B: "up to 10 dBm" where the manual says "above −10 dBm"; not green, not "not stated"
    vna = _hit("To stay in the linear range, decrease the stimulus power so that the input power into any port "
               "does not rise above −10 dBm.")
    question = "How much signal can reach the ports and still stay linear?"
    draft = "The LibreVNA can take up to 10 dBm at the ports and still stay linear. [1]"
    assert not invented_values(question, draft, [vna])
    outcome, _, flags = _decide(question, draft, [vna])
    assert outcome == "evidence_only" and "values_not_in_passages" not in flags
    right = "To stay in the linear range the input power into any port must not rise above −10 dBm. [1]"
    assert _decide(question, right, [vna])[0] == "answered"  # the same value with its sign is backed


def test_a_page_or_section_the_model_names_is_not_a_value() -> None:
    # Qwen2.5-Coder-1.5B: "... dummy load) [1] (page 9)." -- the evidence answered; "9" is where it read it
    tune = _hit("Always have a suitable load connected to the transmitter (matched antenna or dummy load) before "
                "entering TUNE mode.")
    question = "Anything to hook up before hitting TUNE?"
    assert not invented_values(question, "Before hitting TUNE, connect a dummy load [1] (page 9).", [tune])
    assert not invented_values(question, "See section 4.1.2: connect a dummy load before TUNE. [1]", [tune])
    assert invented_values(question, "Before hitting TUNE, connect a 9 ohm dummy load. [1]", [tune])
