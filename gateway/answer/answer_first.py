"""The order of the quoted evidence: the sentence that answers first, a procedure in the manual's order.

In extractive mode the answer a technician reads is the evidence (gateway.answer.extractive): a few
sentences of the top passages. Which of them comes first matters more than which come at all: on a
phone the first sentence is the answer. Issue 48 saw another section's "240C hotend temperature" lead
"PID Tune Hotend ... TARGET=245", a pin map ending in a figure's caption lead "UART0 is configured to
run at 115200 8N1", a fact answered by a bullet ("3000VDC galvanic insulation ...") kept behind the
bullet before it, and bed levelling steps quoted from two passages against the manual's order.

- The lead: the best-scoring sentence picked, except one that only points elsewhere or names a
  picture (bad_lead: a web address with few words, a figure's caption, even glued to a pin map, a
  contents line "Calibration ........ 14"). A bullet or a numbered step leads as well when the
  question asks for a fact; for a procedure ("how do I ...", quantities.asks_how_to) the steps keep
  their order.
- A procedure in the manual's order: for a how-to question the steps and instructions of the lead's
  section (its manual and heading) that the manual gives before the lead come before it, the rest of
  that section after it, as the manual prints them (page, passage, place in it), whichever passage
  ranked first; other sections' sentences after them.
- A value written as a setting: "PID_CALIBRATE HEATER=extruder TARGET=245" sets the question's "target"
  to a number, so it states the asked temperature though no unit follows (names_value; extractive's
  value features read it). section_match and with_parts (the question's terms in the section heading,
  "pid-tune" as "pid" and "tune") were measured as well; they are off.

The choice of these rules and their effect on the development and test halves:
docs/bench/experiments/answer_first.md (bench/experiments/answer_first.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from gateway.answer.quantities import asks_how_to
from gateway.answer.sentence_score import is_instruction
from ingest.text.terms import content_terms
from retrieval.types import Hit

# A figure's caption that ends the sentence ("... GND → GND (Pin 1) Figure 8: Piston-board Debug
# Console"): the words before it label a picture. "As Figure 3-6 shows, check ..." is a sentence.
_CAPTION_IN_RE = re.compile(r"(?:^|\s)(?:fig(?:ure)?\.?|abb(?:ildung)?\.?|图)\s*\d+(?:[.\-–]\d+)*(?![.\-–]?\d)"
                            r"\s*[:：.\-–]?\s+[^.!?。！？]{0,80}$", re.IGNORECASE)
# A table of contents' line: a run of leader dots, or a title and a page number after spaced dots.
_CONTENTS_RE = re.compile(r"(?:\.\s?){5,}\s*\d+|…{2,}\s*\d+")
_URL_RE = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
URL_LEAD_MAX_WORDS = 12  # a sentence with a web address and at most this many other words points elsewhere
_JOINER_RE = re.compile(r"[-/_=]")  # "pid-tune", "baud-rate", "target=245", "rx/tx"
# chunk ids are "<sha12>-p<page>-<index>" (ingest.chunker): the passage's place in its manual
_CHUNK_PLACE_RE = re.compile(r"-p(\d+)-(\d+)$")


class Picked(Protocol):
    """What the ordering reads of a picked sentence (extractive.Candidate has these)."""

    @property
    def n(self) -> int: ...  # passage number, 1 = first
    @property
    def pos(self) -> int: ...  # place in the passage
    @property
    def sentence(self) -> str: ...


C = TypeVar("C", bound=Picked)


def bad_lead(sentence: str) -> bool:
    """A sentence that must not come first: a web address with few other words, a figure caption (alone
    or glued to the pin map or table it labels), a contents line."""
    if _CAPTION_IN_RE.search(sentence) or _CONTENTS_RE.search(sentence):
        return True
    rest = _URL_RE.sub(" ", sentence)
    return rest != sentence and len(rest.split()) <= URL_LEAD_MAX_WORDS


def with_parts(terms: set[str]) -> set[str]:
    """The terms and the parts of those joined by a hyphen, a slash, an underscore or "=": the question's
    "PID-tune" meets the heading's "PID Tune", its "baud rate" the manual's "baud-rate"."""
    out = set(terms)
    for term in terms:
        if _JOINER_RE.search(term):
            out |= content_terms(_JOINER_RE.sub(" ", term))
    return out


_SETTING_RE = re.compile(r"([^\W_]+)\s*[=:]\s*[-+]?\d")  # "TARGET=245", "baudrate: 115200"


def names_value(sentence: str, want: set[str]) -> bool:
    """The sentence sets one of the question's terms to a number ("PID_CALIBRATE HEATER=extruder TARGET=245"
    for "PID-tune target temperature"): a value of the asked kind written without its unit."""
    return any(content_terms(m.group(1)) & want for m in _SETTING_RE.finditer(sentence))


def section_match(want: set[str], heading: str) -> float:
    """The share of the question's terms (and their parts) that the passage's section heading holds:
    "PID-tune target temperature for the hotend" and "PID Tune Hotend" share pid, tune and hotend."""
    asked = with_parts(want)
    return len(asked & with_parts(content_terms(heading))) / len(asked) if asked else 0.0


def _section(hit: Hit) -> tuple[str, str]:
    return hit.manual_sha256, hit.heading or ""


def place(hit: Hit, pos: int) -> tuple[int, int, int]:
    """Where a sentence is in its manual: (page, passage index on the page, sentence index)."""
    m = _CHUNK_PLACE_RE.search(hit.chunk_id)
    return (hit.page, int(m.group(2)) if m else 0, pos)


def arrange(question: str, chosen: Sequence[C], steps: set[tuple[int, int]], hits: Sequence[Hit], *,
            best_first: bool = True, steps_lead: bool = True, avoid_bad: bool = True,
            manual_order: bool = True) -> list[C]:
    """The picked sentences (best first) in the order they are quoted (see the module doc).

    best_first: the lead goes first (off: reading order only). steps_lead: a bullet or a step may lead
    when the question is not a how-to (off: as before issue 48, a step keeps its list's order). avoid_bad:
    bad_lead sentences never lead while another can. manual_order: a how-to question's sentences of the
    lead's section in the manual's order."""
    if not chosen:
        return []
    order = {n: i for i, n in enumerate(dict.fromkeys(c.n for c in chosen))}
    reading = sorted(chosen, key=lambda c: (order[c.n], c.pos))
    how_to = asks_how_to(question)
    lead = next((c for c in chosen if not bad_lead(c.sentence)), chosen[0]) if avoid_bad else chosen[0]
    if manual_order and how_to:
        section, at = _section(hits[lead.n - 1]), place(hits[lead.n - 1], lead.pos)
        mine = sorted((c for c in chosen if _section(hits[c.n - 1]) == section and c is not lead),
                      key=lambda c: place(hits[c.n - 1], c.pos))
        # a step or an instruction the manual gives before the lead comes before it; a remark stays after
        before = [c for c in mine if place(hits[c.n - 1], c.pos) < at
                  and ((c.n, c.pos) in steps or is_instruction(c.sentence))]
        after = [c for c in mine if c not in before]
        return [*before, lead, *after, *(c for c in reading if c is not lead and c not in mine)]
    is_step = (lead.n, lead.pos) in steps
    if not best_first or is_step and (how_to or not steps_lead):
        if avoid_bad and reading and bad_lead(reading[0].sentence) and lead is not reading[0]:
            reading.remove(lead)
            reading.insert(0, lead)
        return reading
    reading.remove(lead)
    return [lead, *reading]
