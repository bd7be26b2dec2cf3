"""Whether the closest passages can answer the question at all, read from what the question names.

The best cosine tells an off-topic question from an on-topic one, not an on-topic question the
manuals do not answer from one they do ("rasdr operating temperature range?" lands on a manual's
temperatures all the same). Two things the question names do tell them apart, on any manual:

- the product: a question word that is in the name (title or file name) of a manual among the given
  passages, but neither in the name nor in the given passages of the manual the first passage comes
  from. The closest evidence then is about another machine ("what baud rate does the handi hand
  sketch use" answered from the logic analyser's guide); its values do not answer for this one.
- a value of a kind the quantity check (gateway.answer.quantities) does not know: a force in N, a baud
  rate, a bus address, an IP rating, a fuse's rating, a tolerance in ppm, a level in dBm, a speed in a
  unit the question names ("in mm/min"). Asked plainly and stated by none of the first manual's
  passages, the answer is not there.

Each check was chosen on the development halves (eval/dev, dev2, dev3, zh-dev, de-dev) and measured
once on the test halves: docs/bench/experiments/unanswerable.md. Plainer rules (the share of the
question's words the passages hold, a word no manual contains) refuse too many answerable questions,
whose technicians' words the manuals do not use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from gateway.answer.quantities import ASKED as QUANTITY_ASKED
from gateway.answer.quantities import asked_quantities, states
from ingest.text.sentences import sentence_spans
from retrieval.named import name_words
from retrieval.term_coverage import passage_terms, question_terms

# kind -> (the question asks for it, a passage states it); lower-cased text
VALUE_KINDS: dict[str, tuple[str, str]] = {
    "force": (r"\b(?:grip|clamping|holding|pull|push|max(?:imum)?)\s+force\b|\bhow much force\b|\bnewtons?\b",
              r"\d\s*(?:n|kn|newtons?|kgf|lbf|gf)\b"),
    # German, Chinese and French ask with their own words (Baudrate, 波特率; I2C-Adresse, I2C 地址; Schutzart, 防护等级,
    # indice de protection: the IP code, not "Schutzklasse", which is the electrical protection class); the values
    # read alike
    "baud rate": (r"\bbaud(?:rate)?\b|波特率",
                  r"\d\s*(?:baud|bps|kbps|bd)\b|\b(?:9600|19200|38400|57600|115200|230400|460800|921600)\b"
                  r"|(?:baud(?:rate)?|波特率)\D{0,20}\d"),  # "波特率，推荐下载频率 2M": the rate named, then its value
    "bus address": (r"\b(?:i2c|i²c|iic|smbus|modbus|slave|device)[\s-](?:address|adresse)\b|\b(?:i2c|iic)\s*地址",
                    r"\b0x[0-9a-f]{1,4}\b|\b[0-9a-f]{2}h\b|\b(?:address(?:es)?|adressen?)\W{1,20}(?:is\s+|ist\s+)?\d"),
    "IP rating": (r"\bip[ -]?(?:rating|rated|code|class|schutzart)\b|\bingress protection\b|\bschutzart\b|防护等级"
                  r"|防水等级|indice de protection|\bindice ip\b", r"\bip\s?[0-9x]{2}\b"),
    # the size of a fuse or breaker to fit (its rating in amperes): not a thermal fuse's temperature, nor eFuse bits
    "fuse rating": (r"\b(?:what|which|what size|what rating)\s+(?:\w+\s+)?(?:fuse|breaker)\b|\bfuse (?:rating|size)\b"
                    r"|\bwelche[nrs]?\s+(?:\w+\s+)?sicherung\b|\bwert\b.{0,30}\bsicherung\b|\bsicherung\b.{0,30}\bwert\b"
                    r"|\bcalibre (?:de|du) (?:disjoncteur|fusible)|\bquel (?:fusible|disjoncteur)\b"
                    r"|保险丝(?:多大|规格|选多少|用多少)",
                    r"\d\s*(?:a|ma|amps?|amperes?)\b|\b[tf]\s?\d+(?:[.,]\d+)?\s?m?a\b"),
    "tolerance in ppm": (r"\bppm\b", r"\d\s*ppm\b"),
    "level in dBm": (r"\bdbm\b", r"\d\s*dbm\b"),
    # asked only by its unit ("maximal in mm/min"): "how fast" or "top speed" alone also ask for a baud rate, a
    # sample rate or a motion profile's setting, and refused answerable questions on eval/dev2 when they asked
    "speed": (r"(?<![\w/])(?:mm|cm|m|km)\s?/\s?(?:min|s|h)\b|\bkm/h\b|\brpm\b|\bu/min\b",
              r"\d\s*(?:(?:mm|cm|m|km)\s?/\s?(?:min|s|sec|h)\b|rpm\b|u/min\b|1/min\b|mph\b"
              r"|(?:mm|m)\s+(?:per|pro)\s+(?:min|minute|s|sec|second|sekunde))"),
}
_ASKED = {k: re.compile(q) for k, (q, _s) in VALUE_KINDS.items()}
_STATED = {k: re.compile(s) for k, (_q, s) in VALUE_KINDS.items()}


class Passage(Protocol):
    title: str
    manual: str
    manual_sha256: str
    heading: str
    text: str


P = TypeVar("P", bound=Passage)


def asked_values(question: str) -> list[str]:
    """The value kinds (VALUE_KINDS) the question asks for."""
    low = question.lower()
    return [k for k, p in _ASKED.items() if p.search(low)]


def states_value(text: str, kind: str) -> bool:
    """Whether the text states a value of that kind (VALUE_KINDS)."""
    return _STATED[kind].search(text.lower()) is not None


def unstated_values(question: str, passages: Iterable[str]) -> list[str]:
    """The value kinds (VALUE_KINDS) the question asks for that none of the passages states."""
    asked = asked_values(question)
    if not asked:
        return []
    texts = [t.lower() for t in passages]
    return [k for k in asked if not any(_STATED[k].search(t) for t in texts)]


def named_elsewhere(question: str, given: Sequence[Passage]) -> tuple[str, str] | None:
    """(the word, the other manual's title) when the question names another manual than the first
    passage's: a question word in that manual's name and in none of the first manual's given passages
    nor its name. None: the question names no other manual among the given passages."""
    if not given:
        return None
    first = given[0].manual_sha256
    words = set(question_terms(question))
    if not words:
        return None
    own: set[str] = set(name_words(given[0].title, given[0].manual))
    for h in given:
        if h.manual_sha256 == first:
            own |= passage_terms("", h.heading, h.text)  # as the question's words: a CJK run as its pairs
    for h in given:
        if h.manual_sha256 == first:
            continue
        names = name_words(h.title, h.manual)  # a file name glues words: "zoedisplay" names the "ZOE"
        other = {w for w in words - own if w in names or len(w) >= 3 and any(w in n for n in names)}
        if other:
            return sorted(other)[0], h.title or h.manual
    return None


_HOW = re.compile(r"\bhow (?:do|can|should|would|to)\b|\bsteps? (?:to|for)\b")


def _states(text: str, kind: str) -> bool:
    return _STATED[kind].search(text.lower()) is not None if kind in _STATED else states(text, kind)


def stated_apart(question: str, passages: Iterable[tuple[str, str]]) -> list[str]:
    """The kinds asked (quantities' and VALUE_KINDS) that the passages (heading, text) state only in
    sentences holding none of the question's other words, its heading counted: a value is an answer
    only where the passage says what it is the value of ("Fabulaser CO2 tube: expected life in hours?"
    is not answered by "turn on the chiller for 5 min"). A procedure question ("how do I ... the
    voltage cal") asks for steps, not a value: none."""
    low = question.lower()
    if _HOW.search(low):
        return []
    kinds = asked_quantities(question) + [k for k, p in _ASKED.items() if p.search(low)]
    texts = list(passages)
    out = []
    for kind in kinds:
        pattern = _ASKED.get(kind) or QUANTITY_ASKED[kind]
        words = {w for w in question_terms(pattern.sub(" ", low)) if len(w) > 1 and not w.isdigit()}
        stated = beside = False
        for heading, text in texts:
            head = passage_terms("", heading, "")  # read as the question's words are: a CJK run as its pairs
            for a, b in sentence_spans(text):
                if _states(text[a:b], kind):
                    stated = True
                    beside = bool(words & (head | passage_terms("", "", text[a:b])))
                    if beside:
                        break
            if beside:
                break
        if stated and not beside:
            out.append(kind)
    return out


def named_first(question: str, given: Sequence[P]) -> list[P]:
    """The given passages with those of the manual the question names first (named_elsewhere), each
    side in its order; unchanged when it names no other manual."""
    named = named_elsewhere(question, given)
    if named is None:
        return list(given)
    sha = next(h.manual_sha256 for h in given if (h.title or h.manual) == named[1])
    return [h for h in given if h.manual_sha256 == sha] + [h for h in given if h.manual_sha256 != sha]
