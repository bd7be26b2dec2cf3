"""Sentences that claim nothing, however well a passage backs them.

A sentence about the passages rather than the machine ("The passage on Cura is from ..."), one that only
says where the answer is written, one that announces a list that never comes or cites where its value
should be, a looping one, and one that only restates the question: the support check
(gateway.answer.support) shows none of them as the answer.
"""

from __future__ import annotations

import re

from gateway.answer.citations import CITATION_RE
from gateway.answer.claim_terms import numbers_of, overlap_terms, without_references
from gateway.answer.draft_units import LIST_MARK_RE

_META_RE = re.compile(r"^\W*(?:the|this|that|these|each|every|all)\s+"
                      r"(?:(?:above|following|given|provided|cited|quoted|previous|preceding|first|second|third|fourth|"
                      r"fifth|last|final|next|other)\s+)?"
                      r"(?:(?:user|user's|owner's|operator's|instruction|service|installation|quick\s+start)\s+)?"
                      r"(?:passages?|manuals?|documents?|guides?|"
                      r"texts?|sections?|pages?|sources?)\b(?!\s+(?:says?|states?|recommends?|requires?)\b)",
                      re.IGNORECASE)


# "(LibreVNA User Manual) mentions that lower values ...", "[2] also mentions that ...": the model naming
# its source, not the machine
_SOURCE_TALK_RE = re.compile(r"^\W*(?:\([^()]{1,80}\)\s+)?(?:also\s+)?(?:mentions?|explains?|confirms?|provides?|"
                             r"states?|describes?|says|notes?|shows?|lists?|gives?|supports?)\b", re.IGNORECASE)


def about_the_text(sentence: str) -> bool:
    """A sentence about the passages themselves ("The passage on Cura is from ..."), not the machine,
    or one that only says where the answer is ("The suggested print specifications are found in
    Table 1"): true, backed, and nothing a technician can act on."""
    sentence = LIST_MARK_RE.sub("", CITATION_RE.sub(" ", sentence))
    return bool(_META_RE.match(sentence) or _SOURCE_TALK_RE.match(sentence)) or points_elsewhere(sentence)


# "... are found in Table 1", "see section 4 of the manual", "refer to the datasheet"
_PLACE = (r"(?:the\s+)?(?:[\w-]+\s+)?"  # "the wiring diagram", "the following table"
          r"(?:tables?|figures?|fig\.|sections?|chapters?|appendix|appendices|pages?|diagrams?|schematics?|"
          r"pictures?|images?|drawings?|illustrations?|manual|datasheet|data\s+sheet|documentation|user\s+guide)\b")
_POINTER_RE = re.compile(
    r"\b(?:is|are|can\s+be|may\s+be|will\s+be)\s+(?:found|listed|shown|given|described|detailed|specified|"
    r"documented|explained|provided|available|included|illustrated|located)\s+(?:in|on|at|under)\s+" + _PLACE
    + r"|^\W*(?:please\s+)?(?:see|refer\s+to|consult|look\s+at)\s+" + _PLACE, re.IGNORECASE)


def points_elsewhere(sentence: str) -> bool:
    """Says where the answer is written and states nothing itself: no value beyond the pointer's own
    number ("Table 1")."""
    return _POINTER_RE.search(sentence) is not None and not numbers_of(without_references(sentence))


# "you need to follow these steps from the manual passages [1] and [2]." and no step after it
_ANNOUNCES_RE = re.compile(r"\b(?:follow(?:ing)?\s+(?:these|the\s+following|the|those)\s+steps|"
                           r"the\s+following\s+(?:steps|settings|instructions))\b", re.IGNORECASE)


# Words no sentence ends in, whose object a citation cannot be: an article or determiner ("close the
# [1]"), "use" ("you should use [1]"). Before a citation they leave the value to the passage; unlike
# "is [1] VALUE", what follows is not joined to them: the grammar makes a model start a new sentence
# there, and read as one claim eval/dev's "close the [1] ESP_PROG1 jumper" (half the answer) and
# eval/test's "use [1] Rose Enclosures" (an enclosure's part number, for a glue) would pass the check.
_OBJECT_WANTED = r"the|an?|your|its|their|this|these|those|use|using"


# "The Lipo pack that fits the UPS is [4] (ESP32-C5-EVB layout:).", "The max sample rate is [2] MHz.": a
# citation where the value should be ("according to [1]" and "as stated in [1]" name a source)
_CITED_AS_VALUE_RE = re.compile(r"(?<!according)\s(?:is|are|was|were|be|to|equals?|" + _OBJECT_WANTED + r")\s*:?\s*"
                                r"\[\d+(?:\s*[,;]\s*\d+)*\]"
                                r"\s*(?:[^\W\d_]{1,6}\b\.?)?\s*(\([^()]*\))?\s*[.;:]?\s*$", re.IGNORECASE)


_BRACKETED_VALUE_RE = re.compile(r"\(\s*[-+~≈±]?\d[\d.,]*\s*[^\W\d_%°µ]{0,6}[%°µ]?\s*\)$")  # "(1.000)", "(40 %)"


def cited_as_value(sentence: str) -> bool:
    """The value is a citation marker, with at most a unit after it; a number (and unit) in brackets
    after it is the value ("The channel width is [2] (1.000).")."""
    for text in (sentence.rstrip(), re.sub(r"\s*\[\d+\]\s*$", "", sentence.rstrip())):  # "... is [4] (...). [1]"
        found = _CITED_AS_VALUE_RE.search(text)
        if found is not None and not (found.group(1) and _BRACKETED_VALUE_RE.match(found.group(1))):
            return True
    return False


def dangling(sentence: str, following: str) -> bool:
    """A sentence that announces what follows ("The full list of commands is:", "follow these steps
    from the passages [1] and [2].") with no list after it, or one whose value is a citation
    ("The pack that fits is [4]."): it claims nothing."""
    if cited_as_value(sentence):
        return True
    said = CITATION_RE.sub("", sentence).rstrip()
    announced = _ANNOUNCES_RE.search(said)  # "... enter the following settings: Width 230, ..." gives them
    return (said.endswith(":") or bool(announced and ":" not in said[announced.end():])) \
        and not LIST_MARK_RE.match(following)


def degenerate(sentence: str) -> bool:
    """A looping sentence: one word three times in a row, or under half of its words distinct."""
    words = re.findall(r"[a-z0-9]+", sentence.lower())
    if len(words) >= 3 and any(words[i] == words[i + 1] == words[i + 2] for i in range(len(words) - 2)):
        return True
    return len(words) >= 12 and len(set(words)) < 0.5 * len(words)


def echoes(sentence: str, question: str) -> bool:
    """A sentence that only restates the question ("The LED blinks while sweeping [1]" to "The LED
    blinks while sweeping. Is my unit faulty?") answers nothing, however well the passage backs it."""
    sentence = CITATION_RE.sub(" ", sentence)
    if numbers_of(sentence) - numbers_of(question):  # it adds a value: "accepts 6 V to 36 V"
        return False
    said = overlap_terms(sentence)
    new = said - overlap_terms(question) - _TALK_ABOUT_TEXT
    return bool(said) and len(new) <= max(1, len(said) // 5)


# Words that talk about the passages rather than the machine: "The above passages are used to explain
# how to flash the firmware" adds nothing to "How do I flash the firmware?" but these.
_TALK_ABOUT_TEXT = overlap_terms("above following passage passages text texts section sections manual manuals "
                                 "document documents guide guides information explain explains explained "
                                 "describe describes described mention mentions mentioned provide provides "
                                 "provided show shows shown used use uses given contain contains")
