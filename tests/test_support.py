"""The support check holds each answer sentence against the passage it cites: the failures seen on
real answers (a wrong torque, an invented accessory, a loop) must not pass, real paraphrases must."""

from __future__ import annotations

import pytest

from gateway.answer.claim_terms import codes_of, numbers_of
from gateway.answer.empty_claims import degenerate
from gateway.answer.grammar import DECLINE, citation_grammar
from gateway.answer.question_focus import addresses_question
from gateway.answer.support import check_against, check_answer, is_decline, supported_text

PUMP = ("Tighten the pump head bolts in a cross pattern to 85 N·m. Use only the O-ring kit P/N 4471-B; "
        "other seals swell in diesel.")
PRINTER = ("Never plug or unplug any device while the printer is powered. Make sure the power jumper on "
           "the SKR Mini E3 is between INT and +5V.")


def test_numbers_are_normalised() -> None:
    assert numbers_of("85 N·m, 2.50 mm and 1,000 rpm") == {"85", "2.5", "1000"}
    assert numbers_of("12-24 V") == {"12", "24"}
    assert "3" not in numbers_of("M3x8 screw")  # part of a code, not a quantity


def test_codes() -> None:
    assert {"skr", "e3", "4471-b"} <= codes_of("SKR Mini E3 with kit 4471-B")
    assert "usb" not in codes_of("a USB cable")  # a common acronym, not a part number


def test_wrong_number_is_unsupported() -> None:
    [check] = check_answer("Tighten the pump head bolts to 2.10 Nm [1].", [PUMP])
    assert not check.supported and check.reason == "number" and check.missing == ["2.1"]


def test_right_number_paraphrased_is_supported() -> None:
    [check] = check_answer("The pump head bolts take 85 N·m, tightened in a cross pattern [1].", [PUMP])
    assert check.supported and check.supported_by == [1] and not check.inferred


def test_invented_part_and_url_are_unsupported() -> None:
    checks = check_answer("Use the O-ring kit 5590-C [1]. Download the tool from www.example.com [1].", [PUMP])
    assert not checks[0].supported and "5590" in checks[0].missing[0]
    assert not checks[1].supported and checks[1].reason == "code"


def test_low_overlap_is_unsupported_and_threshold_matters() -> None:
    sentence = "Replace the seals with diesel-resistant Viton rings every season [1]."
    [strict] = check_answer(sentence, [PUMP], min_overlap=0.6)
    [loose] = check_answer(sentence, [PUMP], min_overlap=0.1)
    assert not strict.supported and strict.reason == "overlap"
    assert loose.supported


def test_loop_is_degenerate() -> None:
    assert degenerate("Level the bed with the extruder extruder extruder extruder")
    [check] = check_answer("Level the bed with the extruder extruder extruder [1].", [PRINTER])
    assert check.reason == "degenerate" and not check.supported


def test_uncited_sentence_gets_an_inferred_citation_from_the_passage_that_backs_it() -> None:
    checks = check_answer("Set the power jumper between INT and +5V.", [PUMP, PRINTER])
    assert checks[0].supported and checks[0].inferred and checks[0].supported_by == [2]
    assert supported_text("Set the power jumper between INT and +5V.", checks).endswith("[2]")


def test_citation_to_the_wrong_passage_is_unsupported() -> None:
    [check] = check_answer("Set the power jumper between INT and +5V [1].", [PUMP, PRINTER])
    assert not check.supported  # it is true, but not in what it cites


def test_only_supported_sentences_are_kept() -> None:
    answer = "Tighten to 85 N·m in a cross pattern [1]. Then torque again to 95 N·m [1]."
    checks = check_answer(answer, [PUMP])
    assert [c.supported for c in checks] == [True, False]
    assert supported_text(answer, checks) == "Tighten to 85 N·m in a cross pattern [1]."
    # a sentence the model wrote twice is shown once (SmolLM2 on ExecuTorch repeated a supported one)
    twice = "Tighten to 85 N·m in a cross pattern [1]. Tighten to 85 N·m in a cross pattern [1]."
    assert supported_text(twice, check_answer(twice, [PUMP])) == "Tighten to 85 N·m in a cross pattern [1]."


def test_decline() -> None:
    assert is_decline(DECLINE) and is_decline(" the manuals do not cover this")
    assert not is_decline("Tighten to 85 N·m [1].")


def test_grammar_lists_only_given_passages() -> None:
    g = citation_grammar(3)
    assert 'cite ::= "1" | "2" | "3"' in g and '"4"' not in g
    assert DECLINE in g
    with pytest.raises(ValueError):
        citation_grammar(0)


def test_an_answer_must_touch_what_the_question_asks() -> None:
    title = "Fabulaser Mini User Manual"
    off = "The Fabulaser Mini is a 40 W laser cutter for makerspaces [1]."
    on = "Change the chiller coolant every three months [1]."
    assert not addresses_question("How often do I change the Fabulaser coolant?", off, title)
    assert addresses_question("How often do I change the Fabulaser coolant?", on, title)
    assert addresses_question("Fabulaser?", off, title)  # nothing but the title: nothing to require


def test_numbers_glued_to_units_count_as_the_same_words() -> None:
    passage = "So the input voltage range can be considered as from 6V to 36V."
    [check] = check_answer("The piston board input voltage range is 6 V to 36 V [1].", [passage])
    assert check.supported, check


def test_sentences_about_the_passages_are_not_answers() -> None:
    passages = ["Slicer Setup and First Print. Cura Installation: use Cura 15.04.6 with the VORON profile."]
    [meta] = check_answer('The passage on "Slicer Setup" is from the passage on "Cura Installation" [1].', passages)
    assert not meta.supported and meta.reason == "meta"
    [real] = check_answer("The manual says to use Cura 15.04.6 with the VORON profile [1].", passages)
    assert real.supported  # "the manual says ..." reports what it says: that is an answer
    # SmolLM2 on ExecuTorch, for "is it OK to unplug a stepper motor while powered?" (bench, generate mode)
    motors = ["Disabling motors: when something goes wrong with the printer, disable the motors with M84."]
    [last] = check_answer("The last passage in the manual refers to disabling motors when something goes wrong "
                          "with the printer. [1]", motors)
    assert not last.supported and last.reason == "meta"
    # SmolLM2 on eval/dev, for "the laser never fires": a green answer made of this sentence alone
    laser = ["Laser head: set it up with the focus tool before the first job."]
    [user] = check_answer("The user manual is about the laser head and how to set it up. [1]", laser)
    assert not user.supported and user.reason == "meta"
    [says] = check_answer("The user manual says to set up the laser head with the focus tool. [1]", laser)
    assert says.supported


def test_a_sentence_announcing_a_list_that_never_comes_is_not_an_answer() -> None:
    # SmolLM2 (llama.cpp) on a sample question, gate 4: green before, nothing in it
    passages = ["Shell commands: help lists the basic commands of the piston board shell.",
                "The following commands are available in the shell.", "Commands control the piston board."]
    draft = ("The full list of commands is: [1]\nThis includes the following commands: [2]\n"
             "These are all commands that can be used to control the piston board. [3]")
    checks = check_answer(draft, passages)
    assert [c.reason for c in checks][:2] == ["dangling", "dangling"] and checks[2].supported
    # two of its three claims back nothing: the pipeline's "mostly unsupported" rule then shows evidence
    assert 2 * sum(c.supported for c in checks) < len(checks)
    # a list that does come keeps its items; only the bare announcement goes
    listed = "Set these options: [1]\n- help lists the basic commands [1]"
    checks = check_answer(listed, passages[:1])
    assert checks[0].reason != "dangling" and checks[1].supported


def test_steps_announced_and_never_given_are_not_an_answer() -> None:
    # the 0.5B on eval/dev ("how do I check the chiller for leaks?"): green before, no step in it
    passages = ["Installing the water chiller: connect the water tubes, fill the chiller with water and turn it "
                "on for 5 min to check for water leakage."]
    draft = ("To check for leaks in the water chiller, you need to follow these steps from the manual "
             "passages [1] (USER MANUAL) and [1] (USER MANUAL).")
    [check] = check_answer(draft, passages, question="Setting up the chiller - how do I check for leaks?")
    assert check.reason == "dangling" and not check.supported
    # settings announced and given in the same sentence are a claim like any other
    given = ("To fill the chiller, you should follow the following steps: connect the water tubes and fill "
             "the chiller with water. [1]")
    [check] = check_answer(given, passages)
    assert check.reason != "dangling" and check.supported


def test_grammar_cannot_end_a_sentence_without_a_citation() -> None:
    g = citation_grammar(2)
    assert r"[^\[\]\n<>.!?]" in g  # a bare full stop is not sentence text: only "[n]" ends one
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python (the [llm] extra) compiles GBNF")
    assert llama_cpp.LlamaGrammar.from_string(g, verbose=False) is not None  # llama.cpp accepts it


def test_a_quantity_question_needs_a_number() -> None:
    q = "How much current does the LibreVNA pull from the USB-C port?"
    assert not addresses_question(q, "The device can be connected to a USB-C port [5].", "LibreVNA User Manual")
    assert addresses_question(q, "It draws up to 1.5 A from the USB-C port [5].", "LibreVNA User Manual")


def test_restating_the_question_is_not_an_answer() -> None:
    q = "The red LO unlocked LED blinks on for a moment while sweeping. Is my unit faulty?"
    passage = "The red LO unlocked LED blinks on for a moment while sweeping: this is normal, the PLL relocks."
    [echo] = check_answer("The red LO unlocked LED blinks on for a moment while sweeping [1].", [passage], question=q)
    assert not echo.supported and echo.reason == "echo"
    [answer] = check_answer("This is normal: the PLL relocks while sweeping [1].", [passage], question=q)
    assert answer.supported


def test_one_shared_word_is_a_coincidence_not_an_answer() -> None:
    q = "Is it OK to unplug a stepper motor from the SKR board while the printer is switched on?"
    title = "Voron Design SKR Mini E3 Setup Guide V0.0"
    assert not addresses_question(q, "Always check the power supply of your printer [3].", title)
    assert addresses_question(q, "Never plug or unplug any device while the printer is powered [2].", title)


def test_a_restated_question_with_the_value_asked_for_is_an_answer() -> None:
    q = "What input voltage range does the piston board accept?"
    [check] = check_answer("The piston board accepts 6 V to 36 V input [1].",
                           ["Piston-board input voltage range can be considered as from 6V to 36V."], question=q)
    assert check.supported


def test_talk_about_the_passages_with_the_question_words_is_not_an_answer() -> None:
    """Seen with SmolLM2 on the sample manuals (make run, 2026-12-01): a green badge on a non-answer."""
    q = "How do I flash the firmware onto the piston board?"
    passage = ("Firmware Flash. In order to flash the firmware to the piston-board, a MSP-FET Flash Emulation "
               "Tool from TI is required. Run make flash.")
    for said in ("The above passages are used to explain how to flash the firmware onto a piston-board. [1]",
                 "These passages describe how to flash the firmware onto the piston board [1]."):
        [meta] = check_answer(said, [passage], question=q)
        assert not meta.supported and meta.reason in ("meta", "echo"), said
    [answer] = check_answer("Flash the firmware with the MSP-FET Flash Emulation Tool and run make flash [1].",
                            [passage], question=q)
    assert answer.supported


def test_a_number_with_its_minus_sign_dropped_is_not_backed() -> None:
    passage = "Decrease the stimulus power so that the input power into any port does not rise above −10 dBm."
    [dropped] = check_answer("The input power into any port must not rise above 10 dBm. [1]", [passage])
    assert not dropped.supported
    [kept] = check_answer("The input power into any port must not rise above -10 dBm. [1]", [passage])
    assert kept.supported, kept
    assert numbers_of("6-42 V, 6 - 42 V") == {"6", "42"}  # a hyphen after a digit is a range, not a sign


def test_the_equipment_named_short_is_not_what_is_asked() -> None:
    # SmolLM2 on eval/dev: "Agon" (the AgonLight2) and "BASIC" made this answer touch the question
    q = "my BASIC program is stuck in a loop on the Agon, how do I break out?"
    title = "AgonLight2 User Manual"
    babble = "BBC Basic commands reference are used to load and view the BASIC on the Agon Light computer. [3]"
    assert not addresses_question(q, babble, title)
    assert addresses_question(q, "To break out of a stuck BASIC program, press the ESC key. [4]", title)
    # a short word is no name: "pin" does not stand for a "pinout" title
    assert addresses_question("which pin is ground?", "Pin 1 is GND. [1]", "Pinout reference")


@pytest.mark.parametrize(("claim", "passage", "ok"), [
    ("The board takes 36V [1].", "The board takes 6 V to 36 V.", True),  # a unit glued or spaced is one value
    ("The printer uses 1.75mm filament [1].", "The printer uses 1.75 mm filament.", True),
    ("The board takes 36V [1].", "The board draws up to 36 A.", False),  # ... and another unit is not it
    ("Fit the 1N4148 diode [1].", "Fit the 1N 4148 diode.", False),  # a part number is not a value
])
def test_a_value_with_its_unit_glued_on_is_the_value_with_the_unit_spaced(claim: str, passage: str,
                                                                         ok: bool) -> None:
    assert check_against(claim, passage, 0.6)[0] is ok
