"""Sentences do not end at "i.e." or "e.g.": the extractive answer quoted "it can provide up to 0.8A @ 5V
(i.e." and left the 4 W and the closing parenthesis out (eval/dev, an ESP32-POE question)."""

from __future__ import annotations

import pytest

from ingest.text.sentences import sentence_spans


def split(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


@pytest.mark.parametrize("abbr", ["i.e.", "e.g.", "vs.", "Fig.", "approx."])
def test_an_abbreviation_does_not_end_the_sentence(abbr: str) -> None:
    text = f"The pad can source up to 0.8A @ 5V ({abbr} 4W) maximum. Do not exceed it."
    assert split(text) == [f"The pad can source up to 0.8A @ 5V ({abbr} 4W) maximum.", "Do not exceed it."]


def test_ordinary_sentence_ends_still_split() -> None:
    assert split("Power it off. Then 12 V goes in. Done! Next? Yes.") == [
        "Power it off.", "Then 12 V goes in.", "Done!", "Next?", "Yes."]


def test_a_pin_or_part_number_after_its_abbreviation_stays_in_the_sentence() -> None:
    # AgonLight2's manual: "Pin. 2 is 5V ... if the USB-C is not connected." was cut after "Pin.", so the
    # support check's polarity test never saw "pin" beside the "not" it must agree with
    text = "Pin.1 is the battery. Pin. 2 is 5V power, usable if the USB-C is not connected. Use part No. 12 here."
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Pin.1 is the battery.", "Pin. 2 is 5V power, usable if the USB-C is not connected.", "Use part No. 12 here."]
    text = "The answer is no. Then stop."
    assert [text[s:e] for s, e in sentence_spans(text)] == ["The answer is no.", "Then stop."]


@pytest.mark.parametrize("text, sentences", [
    # eval/de-dev: "Für die CosMO-Panels haben sich Schwellen von ca." was quoted, the 30 mV left out
    ("Für die Panels haben sich Schwellen von ca. 30 mV als günstig erwiesen. Danach messen.",
     ["Für die Panels haben sich Schwellen von ca. 30 mV als günstig erwiesen.", "Danach messen."]),
    ("Ein Programmiergerät wird benötigt, evtl. Programmierkabel anfertigen. Bausatzkunden bekommen ihn.",
     ["Ein Programmiergerät wird benötigt, evtl. Programmierkabel anfertigen.", "Bausatzkunden bekommen ihn."]),
    ("C13 (ab Rev. 1.4) Polung beachten. Dann L1 bestücken.",
     ["C13 (ab Rev. 1.4) Polung beachten.", "Dann L1 bestücken."]),
    ("Werte wie z. B. Temperatur oder z.B. Druck, bzw. Strom. Siehe S. 12 und Abb. 3. Ende.",
     ["Werte wie z. B. Temperatur oder z.B. Druck, bzw. Strom.", "Siehe S. 12 und Abb. 3.", "Ende."]),
    ("Set the feed to 50 mm/s. Then home the axis.", ["Set the feed to 50 mm/s.", "Then home the axis."]),
])
def test_german_abbreviations_do_not_end_the_sentence(text: str, sentences: list[str]) -> None:
    assert split(text) == sentences
