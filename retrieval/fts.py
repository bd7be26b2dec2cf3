"""Free text -> a safe SQLite FTS5 MATCH expression.

Technicians type questions, not query syntax: quotes, ``-``, ``:``, ``*``, parentheses, AND/OR/NOT,
NEAR and emoji must never reach FTS5 as syntax. Every term is re-emitted as a double-quoted string
made only of letters and digits, so the expression is valid whatever the input was.
"""

from __future__ import annotations

import re
import unicodedata

# Letters and digits; everything else (punctuation, "_", symbols, emoji) separates tokens, which is
# what the unicode61 tokenizer does on the indexed side.
_TOKEN = re.compile(r"[^\W_]+")

# Function words that carry no retrieval signal in a technician's question. Words that change
# meaning on equipment ("on", "off", "up", "down", "not", "no") are deliberately kept.
STOPWORDS = frozenset(
    """
    a about above after again all am an and any are as at be because been before being below
    between both but by can could did do does doing during each few for from further had has have
    having he her here hers herself him himself his how i if into is it its itself just me more
    most my myself nor of once only or other our ours ourselves own same she should so some such
    than that the their theirs them themselves then there these they this those through to too
    under until very was we were what when where which while who whom why will with would you
    your yours yourself yourselves please tell explain describe need needs want use using used
    get gets got shall may might must also
    """.split()
)

MAX_TERMS = 32  # bounds the cost of a pasted page of text
MAX_PHRASE_WORDS = 5


def normalize(text: str) -> str:
    """NFKC folds PDF ligatures ("ﬁ" -> "fi") and full-width forms; used on both index and query."""
    return unicodedata.normalize("NFKC", text)


def tokens(text: str) -> list[str]:
    """Lower-cased letter/digit runs, as the indexed side sees them."""
    return [t.lower() for t in _TOKEN.findall(normalize(text))]


def _quote(parts: list[str]) -> str:
    # Parts contain only letters and digits, so no escaping is ever needed.
    return '"' + " ".join(parts) + '"'


def _is_technical(word: str) -> bool:
    """Capitalised or containing a digit: likely part of a product, board or part name."""
    return any(ch.isdigit() for ch in word) or word[:1].isupper()


def build_match(query: str) -> str | None:
    """Return an FTS5 MATCH expression (terms OR-ed, bm25 ranks them) or None if nothing is left."""
    units = match_units(query)
    return " OR ".join(units) if units else None


def match_units(query: str) -> list[str]:
    """The quoted phrases and terms :func:`build_match` OR-s together, phrases first, no repeats.

    A whitespace-separated word that splits into several tokens ("ERR_42", "foo:bar", "X-STOP")
    becomes a phrase, so exact technical tokens stay exact. Runs of adjacent capitalised or
    alphanumeric words ("SKR Mini E3") are added once more as a phrase, which lifts passages that
    contain the whole name without hiding those that contain only part of it.
    """
    if not isinstance(query, str):
        return []
    terms: list[list[str]] = []
    run: list[list[str]] = []
    phrases: list[list[str]] = []

    def close_run() -> None:
        if 2 <= len(run) <= MAX_PHRASE_WORDS:
            phrases.append([t for part in run for t in part])
        run.clear()

    for word in normalize(query).split():
        parts = tokens(word)
        if not parts:
            close_run()
            continue
        if len(parts) == 1 and parts[0] in STOPWORDS:
            close_run()
            continue
        terms.append(parts)
        raw = "".join(_TOKEN.findall(word))
        if _is_technical(raw):
            run.append(parts)
        else:
            close_run()
    close_run()

    seen: set[str] = set()
    out: list[str] = []
    for parts in phrases + terms:
        q = _quote(parts)
        if q not in seen:
            seen.add(q)
            out.append(q)
        if len(out) >= MAX_TERMS:
            break
    return out
