"""A how-to question's extractive answer carries its steps whole and never leads with a lone title word.

Issue 48 saw "How to calibrate the actuator" begin with "Calibration" (the title of section 4.5.2, whose
number the sentence splitter cut off as a fragment of its own) and its procedure cut at 400 characters,
mid-sentence, with "…". A how-to question's sentences are now quoted up to
EvidenceParams.procedure_chars, cut only where a sentence or a step ends; a line of title words after a
section's number alone is a title, not the start of the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.answer.extractive import EVIDENCE, pick_sentences
from gateway.services import Services
from retrieval.types import Hit
from tests.support.gateways import extractive_gateway


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, sample_data_dir: Path, embedder: Any) -> Iterator[Services]:
    services = extractive_gateway(tmp_path_factory, sample_data_dir, embedder, "how-to-whole")
    yield services
    services.log.close()


def test_calibrating_the_actuator_quotes_the_procedure_whole_without_its_title(gw: Services) -> None:
    """Before: "Calibration First time use of actuator ... shell>set cal 1 The above command will start
    moving ... and starts counting the … [1]"."""
    result = gw.answer("How to calibrate the actuator")
    answer = result.answer
    assert answer.startswith("First time use of actuator"), answer
    assert "shell>set cal 1" in answer, answer
    assert "starts counting the rotation via encoders. [1]" in answer, answer
    assert "…" not in answer, answer
    assert result.citations[0].page == 14


def _hit(text: str, heading: str = "Flashing") -> Hit:
    return Hit(chunk_id="0123456789ab-p0007-000", manual="board.pdf", title="Board", manual_sha256="ab" * 32,
               page=7, heading=heading, text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.5)


# One "sentence" to the splitter (no capital after its inner full stops), longer than 400 characters.
STEP_1 = ("Connect the board to the computer with the USB cable and hold the boot button while you do it. "
          "the power light turns amber once the board waits for the firmware image over the cable.")
STEP_2 = "$ flashtool write --port /dev/ttyUSB0 firmware.bin"
STEP_3 = ("the tool erases the flash, writes the image and checks every block it wrote against the file, "
          "which takes about two minutes for the full image on the slower boards of the series.")
STEP_4 = ("release the boot button only when the tool reports that the write has finished and the "
          "checksum matched, then press reset so that the board starts the new firmware.")


def test_a_long_how_to_sentence_is_cut_where_a_step_ends_never_inside_one() -> None:
    text = "\n".join([STEP_1, STEP_2, STEP_3, STEP_4]) + " ok"
    one_line = " ".join(text.split())
    assert len(one_line) > 400
    question = "How do I flash the firmware on the board?"
    [(_, whole)] = pick_sentences(question, [_hit(text)])
    assert whole == one_line, whole  # fits a procedure's cap: quoted whole
    [(_, cut)] = pick_sentences(question, [_hit(text)], replace(EVIDENCE, procedure_chars=350))
    # the cut falls where a step ends (after step 2's command), then "…"; not at the 350th character
    assert cut == " ".join(f"{STEP_1}\n{STEP_2}".split()) + " …", cut
    # a question that is no how-to keeps the 400-character cut at a word
    [(_, fact)] = pick_sentences("Which port does the flash tool write to on the board?", [_hit(text)])
    assert len(fact) <= 402 and fact.endswith(" …") and not re.search(r"[.!?] …$", fact), fact


def test_a_title_word_after_its_section_number_is_not_quoted() -> None:
    """"4.5.2. Calibration\\nFirst time use ...": the splitter cuts "4.5.2." off; "Calibration" is its title,
    whatever heading the index gave the passage."""
    text = ("4.5.2. Calibration\nFirst time use of the arm needs a calibration which counts the rotations of the "
            "motor.\nThe calibration of the arm ends when the motor stops.")
    for heading in ("4.5.2. Calibration", "Motion"):
        picked = pick_sentences("How to calibrate the arm", [_hit(text, heading)])
        quoted = [s for _, s in picked]
        assert "First time use of the arm needs a calibration which counts the rotations of the motor." in quoted, \
            (heading, picked)
        assert not any(s.startswith("Calibration") for s in quoted), (heading, picked)
