"""The extractive answer's order (issue 27: "the one that answers first"): the sentence that answers
leads, a procedure keeps its own order, and filler with none of the question's words is left out."""

from __future__ import annotations

from dataclasses import replace

from gateway.answer.extractive import EVIDENCE, extractive_answer, pick_sentences, trim_to_window
from retrieval.types import Hit


def hit(text: str, page: int = 1) -> Hit:
    return Hit(chunk_id=f"c{page}", manual="m.pdf", title="M", manual_sha256="0" * 64, page=page,
               heading="", text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.5)


PASSAGE = ("The controller board is mounted under the bed of the printer. "
           "The supported firmware version for the controller board is Marlin 2.1.2 on every unit. "
           "Keep the manual with the printer.")


def test_the_sentence_that_answers_leads_even_when_its_passage_says_something_first() -> None:
    picked = pick_sentences("Which firmware version does the controller board support?", [hit(PASSAGE)])
    assert picked[0] == (1, "The supported firmware version for the controller board is Marlin 2.1.2 on every unit.")
    # the other sentence of the passage that touches the question still follows; the filler does not
    assert [s for _, s in picked] == [
        "The supported firmware version for the controller board is Marlin 2.1.2 on every unit.",
        "The controller board is mounted under the bed of the printer."]
    # reading order is what the answer had before
    old = pick_sentences("Which firmware version does the controller board support?", [hit(PASSAGE)],
                         replace(EVIDENCE, best_first=False))
    assert old[0][1].startswith("The controller board is mounted")


STEPS = ("1. Switch off the printer and unplug the power cable. "
         "2. Unplug the stepper motor cable from the board while the printer is unplugged. "
         "3. Plug the stepper motor cable back in before power is restored.")


def test_numbered_steps_keep_the_procedures_order_when_a_procedure_is_asked() -> None:
    question = "When does the stepper motor cable go back in?"
    # step 3 scores best (picked alone)
    one = replace(EVIDENCE, max_sentences=1)
    assert pick_sentences(question, [hit(STEPS)], one)[0][1].startswith("Plug the stepper")
    for text in (STEPS, STEPS.replace("1. ", "• ").replace("2. ", "\n• ").replace("3. ", "\n• ")):
        # asked a fact ("when"), the step that answers leads (issue 48: the answer first, tests/test_answer_first.py)
        answer = extractive_answer(question, [hit(text)], replace(EVIDENCE, max_sentences=3))
        assert answer.removeprefix("• ").startswith("Plug the stepper motor cable back"), answer
        # before issue 48 (steps_lead off) a step never led: the list kept its order
        old = extractive_answer(question, [hit(text)], replace(EVIDENCE, max_sentences=3, steps_lead=False))
        assert old.index("Unplug the stepper") < old.index("Plug the stepper motor cable back")
        # asked how to, a procedure reads in order
        how = extractive_answer("How do I plug the stepper motor cable back in?", [hit(text)])
        assert how.index("Unplug the stepper") < how.index("Plug the stepper motor cable back"), how


def test_a_how_to_question_gets_the_lists_steps_in_order() -> None:
    glued = "Installing the board\n•Switch off the printer.\n•Open the case and remove the old board.\n" \
            "•Fit the new board and close the case.\n•Switch the printer on."
    for text in (STEPS, glued):
        answer = extractive_answer("How do I fit the new board?" if text is glued else
                                   "How do I plug the stepper motor cable back in?", [hit(text)])
        steps = [part for part in answer.split(" [1]") if part.strip()]
        assert len(steps) >= 3, answer  # more steps than the 2 sentences a passage gives otherwise
        assert steps == sorted(steps, key=lambda part: text.index(part.strip().lstrip("•").strip()[:20]))
        if text is glued:  # bulleted items are lines of their own, "• " + the item: the page shows a list
            assert answer.startswith("• ") and answer.count("\n• ") == len(steps) - 1, answer
    # a glued bullet is its own sentence, not one run with the title and the next items
    assert "Installing the board" not in extractive_answer("How do I fit the new board?", [hit(glued)])


def test_passages_follow_their_best_sentence_and_citations_name_them() -> None:
    weak = hit("Motors are described in chapter four of this guide for the printer.", page=3)
    strong = hit("The stepper motor current is 0.8 A for the X and Y stepper motor drivers.", page=7)
    answer = extractive_answer("What is the stepper motor current?", [weak, strong])
    assert answer.startswith("The stepper motor current is 0.8 A") and answer.split(".")[0].count("[") == 0
    assert answer.index("[2]") < answer.index("[1]")


def test_a_long_run_is_cut_to_the_stretch_that_holds_the_question_words() -> None:
    run = " ".join(["filler"] * 40 + ["working", "area", "600", "x", "400", "mm"] + ["tail"] * 40)
    cut = trim_to_window(run, {"working", "area"}, 10)
    assert cut.startswith("… ") and cut.endswith(" …") and "working area 600 x 400" in cut
    assert trim_to_window("short sentence here", {"short"}, 10) == "short sentence here"


def test_titles_are_not_quoted_but_values_and_sentences_are() -> None:
    from gateway.answer.extractive import is_heading
    assert is_heading("INSTALLING THE WATER CHILLER")
    assert is_heading("Klipper InstallationReferences: Klipper Installation Instructions SKR Installation "
                      "Instructions Installing Klipper Firmware on your SKR Mini E3 Board")
    for line in ("Machine Depth Y (mm): 230", "Thermal Protection Fuse (120°C)", "Keep The Printer Dry.",
                 "• Original Design By OLIMEX Ltd", "the water level of the chiller must be checked"):
        assert not is_heading(line), line
    passage = hit("INSTALLING THE WATER CHILLER\nFill the water chiller with 8 litres of distilled water. "
                  "Check the water chiller for leaks after five minutes.")
    answer = extractive_answer("How much water goes in the water chiller?", [passage])
    assert "INSTALLING" not in answer and answer.startswith("Fill the water chiller with 8 litres")


def test_a_numbered_section_title_is_not_quoted_as_the_answer() -> None:
    """"2.5.2 Instant Capture" and "16.4 Hamlib does not work with my Icom radio" opened the sentence
    quoted after them: a section's number hid its title from the title test (eval/dev2's DSView and
    FreeDV guides)."""
    from gateway.answer.extractive import is_heading
    assert is_heading("2.5.2 Instant Capture") and is_heading("16.10The Signal Is Strong")
    assert is_heading("16.4 Hamlib does not work with my Icom radio", "Hamlib does not work with my Icom radio")
    assert not is_heading("16.4 Hamlib does not work with my Icom radio")  # sentence case, and no heading known
    assert not is_heading("2 Remove The Cover")  # a step's number is not a section's
    passage = hit("2.5.2 Instant Capture\nInstant capture ignores every trigger setting and starts at once.")
    answer = extractive_answer("does instant capture wait for the trigger?", [passage])
    assert answer.startswith("Instant capture ignores every trigger setting")
    troubleshooting = hit("16.4 Hamlib does not work with my Icom radio\nThe most common issue is a CI-V address "
                          "that does not match the radio's.")
    troubleshooting.heading = "Hamlib does not work with my Icom radio"
    answer = extractive_answer("icom radio ignores hamlib", [troubleshooting])
    assert answer.startswith("The most common issue is a CI-V address")


def test_an_faqs_question_is_not_quoted_as_its_answer() -> None:
    """An FAQ's own question shares most words with the technician's ("Can I remove the MPS resistor?")
    and outscored the sentence that answers it (eval/dev's ESP32-POE FAQ, eval/dev2's FreeDV
    troubleshooting)."""
    faq = hit("Can I remove the hot MPS resistor from the PoE board? The MPS resistor keeps the PoE switch "
              "from cutting the power in low-power modes, so removing it is not recommended.")
    picked = pick_sentences("can I remove the hot resistor on the PoE board?", [faq])
    assert picked and all(not s.endswith("?") for _, s in picked)
    assert picked[0][1].startswith("The MPS resistor keeps the PoE switch")


def test_a_chinese_faqs_question_with_a_full_width_mark_is_not_quoted_either() -> None:
    """A Chinese FAQ asks with "？" (eval/zh-dev2's AD16N design guide: "Q4：软关机休眠状态，GPIO 状态应当如何配置？"
    led the evidence for a question about deep-sleep current)."""
    faq = hit("Q4：软关机休眠状态，GPIO 状态应当如何配置？\n"
              "休眠状态下，GPIO 可维持输出 0/1 状态，也可以做输入唤醒或高阻态配置。")
    picked = [s for _, s in pick_sentences("软关机休眠的时候 GPIO 状态怎么配置？", [faq])]
    assert picked and not any(s.endswith(("?", "？")) for s in picked), picked
    assert picked[0].startswith("休眠状态下"), picked


def test_a_figure_caption_alone_is_not_quoted_but_a_sentence_after_a_figure_label_is() -> None:
    text = ("Figure 43 - CyControl program (firmware update step 1). "
            "Select the firmware file in the CyControl program and press Program to start the firmware update. "
            "Figure 44 - CyControl program (firmware update step 2).")
    picked = [s for _, s in pick_sentences("How do I update the firmware with the CyControl program?", [hit(text)])]
    assert picked == ["Select the firmware file in the CyControl program and press Program to start the firmware "
                      "update."]
    # a table's title carries its rows: kept
    table = "Table 4: Screw lengths for the finger joints D2D 15 mm D2I 15.5 mm D3P 20.5 mm"
    assert pick_sentences("screw lengths for the finger joints", [hit(table)])[0][1] == table


def test_german_and_chinese_figure_captions_are_not_quoted() -> None:
    # the FlashCube guide (eval/zh-dev3): "图 7.3: 压缩烧写模式" was quoted between two answering sentences
    zh = ("压缩烧写可以极大的提升烧写速度。其中 BL702 不支持压缩烧写方式。图 7.3: 压缩烧写模式\n"
          "图 3.1 中的按键用于切换压缩烧写模式，按下后重启。")
    picked = [s for _, s in pick_sentences("BL702 能不能开压缩烧写模式？", [hit(zh)])]
    assert picked and not any(s.startswith("图 7.3") for s in picked), picked
    assert any(s.startswith("图 3.1 中的按键") for s in picked), picked  # a sentence naming a figure is kept
    de = ("Abbildung 4: Grafische Oberfläche des Puffermanagers\n"
          "Über die Kontrollflächen des Puffermanagers kann die Datennahme pausiert werden.")
    picked = [s for _, s in pick_sentences("Wie pausiere ich die Datennahme im Puffermanager?", [hit(de)])]
    assert picked[0].startswith("Über die Kontrollflächen") and not any("Abbildung" in s for s in picked), picked


def test_the_same_statement_from_two_passages_is_quoted_once() -> None:
    # overlapping chunks, or one paragraph written twice for two board variants, differing by a word
    first = hit("Refer to this Arduino IDE example to see how you can check for external power and check the "
                "battery measurement.", page=3)
    second = hit("Refer to this Arduino IDE example to see how you can check for the presence of external power "
                 "and check the battery measurement.", page=4)
    other = hit("The battery measurement needs the BAT_SENS jumper closed before it reads external power.", page=5)
    picked = pick_sentences("How do I check the battery measurement and external power?", [first, second, other])
    assert [n for n, _ in picked] == [1, 3] or [n for n, _ in picked] == [3, 1]


def test_two_alike_sentences_with_other_numbers_are_both_quoted() -> None:
    # two board variants, one paragraph each: the values differ, so they are two facts
    a = hit("The ESP32-POE board draws about 200 mA from the Ethernet port when WiFi and Ethernet both run "
            "at full speed during the tests.", page=3)
    b = hit("The ESP32-POE board draws about 250 mA from the Ethernet port when WiFi and Ethernet both run "
            "at full speed during the tests.", page=4)
    picked = pick_sentences("How much current does the ESP32-POE board draw from the Ethernet port?", [a, b])
    assert sorted(n for n, _ in picked) == [1, 2]


def test_a_figure_caption_line_above_a_sentence_is_not_quoted_with_it() -> None:
    # the sample piston-board manual: the caption sits on its own line, the sentence on the next
    text = ("In order to flash the firmware, a flash emulation tool from TI is required as shown below.\n"
            "Figure 6: MSP-FET Emulation Tool\n"
            "There is a 10 pins female connector at the end of this emulation tool that connects\n"
            "to the 10 pins male header on the piston-board (J5).")
    picked = [s for _, s in pick_sentences("Which header does the emulation tool connector go on?", [hit(text)])]
    assert picked[0].startswith("There is a 10 pins female connector")
    assert not any("Figure 6" in s for s in picked)
    # a sentence that merely starts with a figure's number and goes on below is kept whole
    wrapped = "Figure 5 shows the locations\nthat need to be sanded before the joint of the finger is assembled."
    assert pick_sentences("which locations need to be sanded on the finger joint", [hit(wrapped)])[0][1].startswith(
        "Figure 5 shows the locations")


def test_a_bare_web_address_is_never_quoted() -> None:
    # issue 48 item 3: "how to calibrate the actuator" began with the product's URL
    text = ("www.example-actuators.com/products/linear-actuator-calibration \n"
            "To calibrate the actuator, send the command set cal 1 and wait for the LED to blink twice.")
    answer = extractive_answer("How do I calibrate the actuator?", [hit(text)])
    assert answer.startswith("To calibrate the actuator"), answer
    assert "www." not in answer
    # a sentence that says what to do with the address stays
    kept = "Download the actuator calibration tool from https://example.com/tools before you start."
    assert "https://example.com/tools" in extractive_answer("Where do I get the calibration tool?", [hit(kept)])


def test_a_sentence_stating_the_value_kind_asked_leads_for_the_value_checks_kinds_too() -> None:
    # a baud rate is a kind of the value checks (gateway.answer.coverage), not of the quantity check: it gets the
    # same bonus, so the sentence that states it leads though its passage comes second
    first = hit("The debug console of the board is the console connector next to the battery pack.", 5)
    second = hit("Open the terminal with minicom -D /dev/ttyUSB0 -b 115200 on the host computer.", 13)
    picked = pick_sentences("What baud rate does the debug console use?", [first, second])
    assert picked[0][0] == 2 and "115200" in picked[0][1], picked
