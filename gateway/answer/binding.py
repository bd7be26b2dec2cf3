"""Does the passage say it about the same thing, the same way round? Two checks word overlap cannot make.

A number the claim and the passage share may be stated there about something else ("every 50 hours"
for the nozzle, not the belt); a claim with all of a passage's words may turn its instruction around
("never unplug while powered" against "unplugging while powered is safe").
"""

from __future__ import annotations

import re

from gateway.answer.citations import CITATION_RE
from gateway.answer.claim_terms import fold, numbers_of, overlap_terms
from ingest.text.sentences import BULLETS, sentence_spans

_BULLET_RE = re.compile(rf"^\s*[{BULLETS}]")

_NEGATION_RE = re.compile(r"\b(?:not|no|never|none|nothing|neither|nor|cannot|without|avoid)\b|n't\b|n’t\b")
# Idioms that hold a "no" and deny nothing: "so there is no problem to connect USB" says it is fine,
# "not only X but Y" says both. Read as negations, they turned a passage's yes into a no (the
# ESP32-POE-ISO's "3000VDC galvanic insulation ..., so there is no problem to connect to USB").
_NOT_DENYING_RE = re.compile(r"\bno (?:problems?|issues?|trouble)\b|\bnot only\b|\bno matter\b")


def negated(text: str) -> bool:
    return bool(_NEGATION_RE.search(_NOT_DENYING_RE.sub(" ", fold(text))))


def closest(want: set[str], sentences: list[str]) -> list[str]:
    """The sentences sharing the most of `want` (all of them on a tie; none when none shares a word)."""
    best, said = 0, []
    for sentence in sentences:
        shared = len(want & overlap_terms(sentence))
        if shared > best:
            best, said = shared, [sentence]
        elif shared == best and shared:
            said.append(sentence)
    return said


def same_polarity(claim: str, passage: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Do the passage sentences sharing most words with the claim agree with it on "not"?

    Word overlap cannot tell "never unplug while powered" from "unplugging while powered is safe";
    a negation on one side only turns the passage's instruction around, so such a claim is not
    backed. Conservative on purpose: a paraphrase that trades a negation for an antonym ("do not
    exceed 36 V" -> "stay below 36 V") is rejected too, and the evidence is shown instead.
    The manual's title words (`ignore`) count for no sentence: the title line is glued to the
    passage's first sentence, and "AgonLight2" made it outweigh the "not" of the pin 2 sentence.
    """
    said = closest(overlap_terms(claim) - ignore, [passage[s:e] for s, e in sentence_spans(passage)])
    # sentences that share as many words are as much what the claim rests on: each must agree
    return all(negated(claim) == negated(one) for one in said)


# Units and counting words: they say what kind a number is, not what it is about.
_UNITS = frozenset("""v vac vdc mv kv a ma ua µa amp amps ampere amperes w kw mw watt watts va c f °c °f deg degree
degrees mm cm m km in inch inches ft foot feet meter meters metre metres kg g lb lbs pound pounds gram grams
s sec second seconds ms min minute minutes h hr hrs hour hours day days week weeks month months year years
hz khz mhz ghz rpm nm n bar psi kpa mpa pa hpa awg mb gb kb tb mbps kbps bps baud dpi ppm pcs pc x
percent number numbers value values times time total approximately about around up least most maximum
minimum max min every each per once twice after before within""".split())


def unbound_numbers(claim: str, passage: str, ignore: frozenset[str] = frozenset()) -> list[str]:
    """Numbers the passage states, but never beside anything the claim says they are about.

    "Replace the belt every 50 hours" is not backed by "clean the nozzle every 50 hours": the value
    and its unit are there, its subject is not. A number counts as bound when a passage sentence
    holding it (or the line before, a table's row label) shares a word with the claim other than
    units and the manual's title words (`ignore`: "the Fabulaser Mini takes 220 V" is about nothing
    the title does not already say). A claim made of a number and units only has nothing to bind.
    """
    subject = {t for t in overlap_terms(claim) if t not in _UNITS and t not in ignore}
    if not subject:
        return []
    spans = sentence_spans(passage)
    unbound = []
    for n in numbers_of(claim):
        bound = False
        for i, (s, e) in enumerate(spans):
            if n not in numbers_of(passage[s:e]):
                continue
            own = passage[s:e]
            # a bulleted item is its own statement: the bullet before it labels nothing ("change
            # the prefilter" in one bullet bound "once in 3 month" of the next to a coolant change)
            before = passage[spans[i - 1][0]:spans[i - 1][1]] if i and not _BULLET_RE.match(own) else ""
            if subject & overlap_terms(before + "\n" + own):
                bound = True
                break
        if not bound:
            unbound.append(n)
    return sorted(unbound)


_YES_RE = re.compile(r"^\W*yes\b", re.IGNORECASE)
_NO_RE = re.compile(r"^\W*no\b", re.IGNORECASE)
# "Can the USB-C stay connected?", "... - is it safe to ...?", "PVC signs on the laser, ok?"
_YES_NO_RE = re.compile(
    r"(?:^|[-–—,:;]\s*)(?:can|could|is|are|does|do|did|should|shall|may|might|will|would|must)\s+"
    r"(?:i|it|we|you|they|the|my|our|this|that|these|those|a|an)\b|\b(?:ok|okay|allowed|safe)\s*\?\s*$",
    re.IGNORECASE)


def yes_contradicted(question: str, answer: str, backed: list[str], ignore: frozenset[str] = frozenset()) -> bool:
    """An answer that opens "Yes" while the backed sentences touching the question most all say "not".

    "Yes, [1] ... Do not use materials such as PVC [1]" to "PVC signs on the laser, ok?": every sentence
    is backed, and the verdict that decides what the technician does is the one claim no passage
    backs. The verdict is held to the polarity of the backed sentences sharing most of the question's
    words (the manual's title words aside). Only "Yes" is held: it permits what the manual may forbid,
    and a "No" is often followed by the positive alternative ("No, it needs 48 V").
    """
    if not _YES_RE.match(CITATION_RE.sub(" ", answer)):
        return False
    bodies = [_YES_RE.sub("", CITATION_RE.sub(" ", sentence), count=1) for sentence in backed]
    said = closest(overlap_terms(question) - ignore, bodies)
    return bool(said) and all(negated(s) for s in said)


def affirms(question: str, answer: str) -> bool:
    """Does the answer say yes to a yes/no question, in words ("Yes, ...") or by restating it without a "not"?"""
    first = CITATION_RE.sub(" ", answer[slice(*sentence_spans(answer)[0])]) if answer.strip() else ""
    if _YES_RE.match(first):
        return True
    return bool(_YES_NO_RE.search(question)) and bool(first.strip()) and not _NO_RE.match(first) \
        and not negated(first)


# A state and its opposite: "leave noise reduction on?" against "noise reduction should be off".
_STATE_WORDS = {"on": "on", "off": "off", "enable": "enabled", "enabled": "enabled", "disable": "disabled",
                "disabled": "disabled", "open": "open", "opened": "open", "closed": "closed",
                "connected": "connected", "disconnected": "disconnected", "plugged": "connected",
                "unplugged": "disconnected"}
_OPPOSITE = {"on": "off", "off": "on", "enabled": "disabled", "disabled": "enabled", "open": "closed",
             "closed": "open", "connected": "disconnected", "disconnected": "connected"}
# "on" is a state where nothing it sits on follows: "leave it on with ...", "is the LED on?", not "on the frame"
_STATE_RE = re.compile(r"\b(?:on(?=\s*(?:$|[.,;:!?)]|(?:with|while|during|when|and|or|for|after|before|at all)\b))"
                       r"|off|enabled?|disabled?|opened|open(?=\s*(?:$|[.,;:!?)]|(?:with|while|during|when|and|or)\b))"
                       r"|closed|connected|disconnected|plugged|unplugged)\b")


def states_of(text: str) -> set[str]:
    return {_STATE_WORDS[w] for w in _STATE_RE.findall(fold(text))}


def opposite_state(question: str, sentence: str) -> bool:
    """The sentence puts what the question asks about in the opposite state, and never in the asked one."""
    asked, said = states_of(question), states_of(sentence)
    return bool(asked) and not asked & said and any(_OPPOSITE[a] in said for a in asked)


def passage_says_not(question: str, passages: list[str], ignore: frozenset[str] = frozenset()) -> bool:
    """Do the cited passages' sentences touching the question most all say "not"?

    "The USB-C can stay connected if the Li-Po battery is connected [2]" to "powering the Agon through
    GPIO pin 2 - can the USB-C stay connected?": every word is in passage 2, whose sentence on pin 2
    and the USB says "you should not have the USB cable attached". A yes that the passage answers
    with a no is not shown as an answer.
    """
    sentences = [p[s:e] for p in passages for s, e in sentence_spans(p)]
    said = closest(overlap_terms(question) - ignore, sentences)
    # a "not" or the opposite state turns it round ("should be off" to "leave it on?"); both turn it back
    return bool(said) and all(negated(s) != opposite_state(question, s) for s in said)


_CONTRACTION_RE = re.compile(r"\b\w+n['’]t\b", re.IGNORECASE)


def only_denied(question: str, passages: list[str], ignore: frozenset[str] = frozenset()) -> str:
    """A thing the question asks about that the passages mention only in sentences saying "not", or "".

    "Cleaning the lid window - microfiber ok?" answered "Yes, you can use a microfiber cloth [1]":
    passage 1's sentence closest to the question is about the window, and its only word on microfiber
    is "Do not rub it with a sponge or microfiber cloth". A yes about something the passages name
    only to forbid is not shown as an answer.
    """
    from ingest.text.stopwords import SEARCH_EN as STOPWORDS  # search's list: "them", "still" ask about nothing

    sentences = [p[s:e] for p in passages for s, e in sentence_spans(p)]
    for term in sorted(overlap_terms(_CONTRACTION_RE.sub(" ", question)) - ignore - STOPWORDS):
        with_term = [s for s in sentences if term in overlap_terms(s)]
        if with_term and all(negated(s) for s in with_term):
            return term
    return ""
