"""Sentences do not end at "i.e." or "e.g.": the extractive answer quoted "it can provide up to 0.8A @ 5V
(i.e." and left the 4 W and the closing parenthesis out (eval/dev, an ESP32-POE question)."""

from __future__ import annotations

import pytest

from gateway.answer.citations import sentence_spans


def split(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


@pytest.mark.parametrize("abbr", ["i.e.", "e.g.", "vs.", "Fig.", "approx."])
def test_an_abbreviation_does_not_end_the_sentence(abbr: str) -> None:
    text = f"The pad can source up to 0.8A @ 5V ({abbr} 4W) maximum. Do not exceed it."
    assert split(text) == [f"The pad can source up to 0.8A @ 5V ({abbr} 4W) maximum.", "Do not exceed it."]


def test_ordinary_sentence_ends_still_split() -> None:
    assert split("Power it off. Then 12 V goes in. Done! Next? Yes.") == [
        "Power it off.", "Then 12 V goes in.", "Done!", "Next?", "Yes."]
