"""Free text -> a safe SQLite FTS5 MATCH expression.

Technicians type questions, not query syntax: quotes, ``-``, ``:``, ``*``, parentheses, AND/OR/NOT,
NEAR and emoji must never reach FTS5 as syntax. Every term is re-emitted as a double-quoted string
made only of letters and digits, so the expression is valid whatever the input was.

Two kinds of index exist. Versions written before languages (``analysed=False``) hold the raw text
under SQLite's porter tokenizer: the question's words go in as typed and SQLite stems them. Newer
versions hold each chunk's terms as its language's analyser made them (ingest.text.terms: Snowball
stems, CJK character pairs): the question is analysed the same way, once per language the index
holds, since an English question may be about a German manual.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ingest.text.languages import detect_question
from ingest.text.stopwords import SEARCH_EN, search_stopwords
from ingest.text.terms import TOKEN, bigrams, cjk_query_runs, normalize, pieces, term_variants, tokens

__all__ = ["MAX_TERMS", "STOPWORDS", "build_match", "match_units", "normalize", "tokens"]

STOPWORDS = SEARCH_EN  # the English list: versions without languages, and term_coverage's English words

MAX_TERMS = 32  # bounds the cost of a pasted page of text
MAX_PHRASE_WORDS = 5
MAX_CJK_PHRASE = 6  # a CJK run of 3..6 characters is also searched as one phrase of its pairs


def _quote(parts: Sequence[str]) -> str:
    # Parts contain only letters and digits, so no escaping is ever needed.
    return '"' + " ".join(parts) + '"'


def _is_technical(word: str) -> bool:
    """Capitalised or containing a digit: likely part of a product, board or part name."""
    return any(ch.isdigit() for ch in word) or word[:1].isupper()


def build_match(query: str, languages: Iterable[str] | None = None) -> str | None:
    """Return an FTS5 MATCH expression (terms OR-ed, bm25 ranks them) or None if nothing is left."""
    units = match_units(query, languages)
    return " OR ".join(units) if units else None


def match_units(query: str, languages: Iterable[str] | None = None) -> list[str]:
    """The quoted phrases and terms :func:`build_match` OR-s together, phrases first, no repeats.

    A whitespace-separated word that splits into several tokens ("ERR_42", "foo:bar", "X-STOP")
    becomes a phrase, so exact technical tokens stay exact. Runs of adjacent capitalised or
    alphanumeric words ("SKR Mini E3") are added once more as a phrase, which lifts passages that
    contain the whole name without hiding those that contain only part of it.

    ``languages``: None for a version without languages (words as typed, SQLite stems them); else the
    languages the index holds, each of which stems the question's words (CJK runs become pairs).
    """
    if not isinstance(query, str):
        return []
    langs = None if languages is None else list(dict.fromkeys(languages)) or ["en"]
    stop = STOPWORDS if langs is None else search_stopwords(detect_question(query))
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
        if len(parts) == 1 and parts[0] in stop:
            close_run()
            continue
        if langs is not None and any(cjk for p in parts for _s, cjk in pieces(p)):
            close_run()
            terms.extend(_cjk_units(parts, langs, phrases))
            continue
        terms.append(parts)
        raw = "".join(TOKEN.findall(word))
        if _is_technical(raw):
            run.append(parts)
        else:
            close_run()
    close_run()

    seen: set[str] = set()
    out: list[str] = []
    for parts in phrases + terms:
        for q in _forms(parts, langs):
            if q not in seen:
                seen.add(q)
                out.append(q)
        if len(out) >= MAX_TERMS:
            break
    return out[:MAX_TERMS]


def _cjk_units(parts: list[str], langs: list[str], phrases: list[list[str]]) -> list[list[str]]:
    """A word holding CJK: each run cut at question words into character pairs (each one unit), a
    short run once more as the phrase of its pairs; Latin pieces inside it stay words."""
    units: list[list[str]] = []
    for part in parts:
        for piece, cjk in pieces(part):
            if not cjk:
                units.append([piece])
                continue
            for run in cjk_query_runs(piece):
                pairs = bigrams(run)
                if 3 <= len(run) <= MAX_CJK_PHRASE:
                    phrases.append(pairs)
                units.extend([p] for p in pairs)
    return units


def _forms(parts: list[str], langs: list[str] | None) -> list[str]:
    """The quoted unit as the index holds it: as typed (old versions) or stemmed per language."""
    if langs is None:
        return [_quote(parts)]
    forms = [[term_variants(p, langs) if not any(c for _s, c in pieces(p)) else [p] for p in parts]]
    out: list[str] = []
    for lang_index in range(max(len(v) for v in forms[0])):
        stemmed = [v[min(lang_index, len(v) - 1)] for v in forms[0]]
        out.append(_quote(stemmed))
    return list(dict.fromkeys(out))
