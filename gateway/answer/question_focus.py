"""Does an answer touch what the question asks about? The support check's test of relevance.

A true sentence about the right machine answers nothing when it misses the question's own words, or
gives no number to a question that asks for a quantity (gateway.answer.support, gateway.answer.support_check).
"""

from __future__ import annotations

import re

from gateway.answer.citations import CITATION_RE
from gateway.answer.claim_terms import numbers_of, overlap_terms

# Words a question uses that say nothing about what it asks for.
_VAGUE = frozenset("need needs get make work works happen ok okay right wrong thing way go going know tell "
                   "want able please much many kind type should one onto off".split())


# A question that asks for a quantity is not answered by a sentence without a number.
_QUANTITY_RE = re.compile(
    r"\bhow (?:much|many|big|fast|far|heavy|hot|cold|wide|tall|deep|thick)\b"
    r"|\bwhat(?:'s| is| are)? (?:the )?(?:max(?:imum)? |min(?:imum)? )?(?:voltage|current|temperature|size|"
    r"torque|pressure|speed|frequency|power|rating|capacity|resolution|baud|dimensions?|weight|length|"
    r"width|height|depth|diameter|interval|range)\b",
    re.IGNORECASE)


def asks_quantity(question: str) -> bool:
    """"How much ...", "what is the voltage ...": a question a sentence without a number does not answer."""
    return _QUANTITY_RE.search(question) is not None


def addresses_question(question: str, answer: str, title: str = "") -> bool:
    """Does the answer touch what the question asks about, beyond naming the equipment?

    A passage about the right machine backs many true sentences that answer nothing ("The Fabulaser
    Mini is a 40 W laser cutter [1]" to "what coolant does it take?"). At least one of the question's
    own content words, other than the manual's title words, must be in the answer (two, when the
    question has four or more: one shared word such as "printer" is then a coincidence, not an answer);
    and a question asking for a quantity ("how much current", "what voltage") needs a number.
    """
    answer = CITATION_RE.sub(" ", answer)
    if asks_quantity(question) and not numbers_of(answer):
        return False
    named = overlap_terms(title)
    # "Agon" for the AgonLight2: the equipment's name, shortened, says nothing about what is asked
    focus = {t for t in overlap_terms(question) - named - _VAGUE
             if not (len(t) >= 4 and any(n.startswith(t) for n in named))}
    if not focus:
        return True
    return len(focus & overlap_terms(answer)) >= (1 if len(focus) <= 3 else 2)
