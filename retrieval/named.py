"""The manuals a question names, read from the catalog: a search scope nobody had to type.

A technician names the equipment ("VORON 热床中心坐标是多少？", "piston board 的调试串口波特率"). On a
gateway whose catalog also holds manuals in the question's language, the language pulls those first:
on the development halves ingested into one catalog (37 manuals, four languages), Chinese questions
about English manuals found a gold page among the top five for 6 of 30 questions, and German ones for
19 of 30. A question that names manuals is searched among them (retrieval.search), and they are
found for 13 and 24 of the 30 (docs/bench/experiments/named_manuals.md).

A word names a manual when it is a word of the manual's name (title or file name, words that name no
product left out) and no other manual's passages hold it: "piston", "fabulaser", "rvpc" name one
manual; "printer", "flash" or "ESP32" are in many manuals and name none, however many names hold them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable

from ingest.text.scripts import CJK_RUN
from ingest.text.stopwords import SEARCH
from ingest.text.terms import tokens
from retrieval.term_coverage import stem

# Words of a manual's name that name no product, in the languages of the manuals so far.
GENERIC = frozenset("""user users manual manuals guide guides setup set up quick start assembly instructions instruction
    series datasheet data sheet document documentation doc docs handbook reference operating operation operator
    owner owners installation install getting started version rev revision pdf the and for of en de zh
    anleitung bedienungsanleitung benutzerhandbuch handbuch aufbauanleitung bestueckungsanleitung bestückungsanleitung
    betriebsanleitung kurzanleitung manuel utilisation utilisateur notice tutorial introduction""".split())
# Function words of every language search knows ("die", "la", "this" in a stale PDF title)
_COMMON = frozenset().union(*SEARCH.values())


def name_words(title: str, file_name: str) -> set[str]:
    """A manual's name as words (title and file name, stemmed as the question's), generic ones left out."""
    return set(_name_words(title, file_name))


@functools.lru_cache(maxsize=8192)  # read for every manual of the catalog at every question
def _name_words(title: str, file_name: str) -> frozenset[str]:
    base = re.sub(r"\.pdf$", "", file_name, flags=re.IGNORECASE).replace("_", " ")
    return frozenset(stem(w) for w in tokens(f"{title} {base}") if w not in GENERIC and not w.isdigit() and len(w) > 1)


def named_manuals(question: str, manuals: Iterable[tuple[str, str, str]],
                  holders: Callable[[str], Collection[str]]) -> set[str]:
    """The sha256s of the manuals (sha256, title, file name) the question names; `holders(word)`: the
    manuals whose passages hold a word. A name word is matched whole, or as two question words glued
    ("piston board" names "pistonboard"), never as a part ("board" is no name of "pistonboard")."""
    low = question.lower()
    raw = [w for w in tokens(question) if not w.isdigit()]
    pairs = list(zip(raw, raw[1:], strict=False))
    said = {stem(w): w for w in raw} | {a + b: a + b for a, b in pairs} | {stem(a) + stem(b): a + b for a, b in pairs}
    names: dict[str, set[str]] = {}
    for sha, title, file_name in manuals:
        for word in _name_words(title, file_name) - _COMMON:
            cjk = CJK_RUN.search(word) is not None  # a Chinese name of two characters is a name ("蜂鸟")
            if (len(word) > 2 and word in said) or (cjk and len(word) > 1 and word in low):
                names.setdefault(word, set()).add(sha)
    named: set[str] = set()
    for word, shas in names.items():
        if set(holders(said.get(word, word))) <= shas:
            named |= shas
    return named
