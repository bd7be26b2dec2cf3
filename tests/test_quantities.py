"""The quantity check: a question asking for a kind of value that no given passage states is not found."""

from __future__ import annotations

import pytest

from gateway.answer.quantities import asked_quantities, states, unstated_quantities


@pytest.mark.parametrize(("question", "kinds"), [
    ("What is the operating humidity range?", ["humidity"]),
    ("How heavy is the unit - can one person lift it?", ["mass"]),
    ("Torque for the M5 frame screws?", ["torque"]),
    ("What input voltage range does the board accept?", ["voltage"]),
    ("how loud is it while printing, in dB?", ["loudness"]),
    ("What air pressure in bar should the compressor deliver?", ["pressure"]),
    # Words that look like quantities but are not asked as one: no check, answered as before.
    ("What SD card size do I need?", []),
    ("How do I flash the firmware?", []),
    ("customer wants vinyl signs cut, ok?", []),
])
def test_asked_quantities(question: str, kinds: list[str]) -> None:
    assert asked_quantities(question) == kinds


@pytest.mark.parametrize(("text", "kind", "expected"), [
    ("Input: 6.5 to 15 V DC", "voltage", True),
    ("Machine Width X (mm): 230", "length", True),
    ("Tighten to 85 N·m", "torque", True),
    ("Tighten to 85 Nm", "torque", True),
    ("Operating humidity 10 to 90 %", "humidity", True),
    ("Weight: 12.5 kg", "mass", True),
    ("The relative humidity must be low", "humidity", False),
    ("Use version 15 of the slicer", "voltage", False),
    ("A 12V PSU rated 16.7A", "current", True),
    ("Set the bed to 60C and the nozzle to 200 °C", "temperature", True),
])
def test_states(text: str, kind: str, expected: bool) -> None:
    assert states(text, kind) is expected


def test_unstated_quantities_needs_every_asked_kind_somewhere() -> None:
    passages = ["Heater: silicone, 110V", "Power supply 12 V 16.7 A"]
    assert unstated_quantities("heated bed voltage and wattage?", passages) == ["power"]
    assert unstated_quantities("heated bed voltage and wattage?", [*passages, "250W heater"]) == []
    assert unstated_quantities("How do I level the bed?", []) == []
