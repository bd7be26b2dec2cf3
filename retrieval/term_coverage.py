"""How much of the question a passage holds: the share of its words, weighted by their rarity.

BM25 sums over the question's words, so a passage that repeats one rare word ("firmware" six times)
can outscore one that holds the part name, the setting and the symptom the question names together.
The best-sentence cosine (retrieval.sentence_rank) sees the topic, not whether those words are there.
This share (each word weighted by its inverse document frequency in the index, the passage read as the
index reads it: title, heading and text) is added to the sentence step's key; on eval/dev + eval/dev2
it lifted MRR from 0.822 to 0.856 and agreed on eval/dev3 and eval/test, which never entered the
choice (docs/bench/experiments/sentence_terms.md).

Words are the lexical index's tokens minus its stop words, compared after a light suffix strip
(plural, then -ing or -ed), so "adjusting" finds "adjusted" and "cables" "cable"; document
frequencies are counted by the FTS5 index itself (ChunkReader.term_doc_freqs), so older index
versions need nothing new.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from ingest.text.languages import detect_question
from ingest.text.stopwords import search_stopwords
from ingest.text.terms import bigrams, cjk_query_runs, pieces, tokens

MAX_TERMS = 32  # as the lexical side: a pasted page of text costs no more than a question


def stem(word: str) -> str:
    """The word (lower-cased) without a plural ending, then without -ing or -ed when four letters
    remain: "settings" and "setting" both give "sett", "cables" and "cable" "cable"."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes", "zes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def _words(token: str) -> list[tuple[str, bool]]:
    """A token as the share counts it: a CJK run as its character pairs, other letters as one word."""
    out: list[tuple[str, bool]] = []
    for piece, cjk in pieces(token):
        out.extend([(b, True) for b in bigrams(piece)] if cjk else [(piece, False)])
    return out


def question_terms(query: str) -> dict[str, str]:
    """The question's content words: stem -> the word as typed (lower-cased), first occurrence kept;
    a CJK run, cut at its question words, counts as its character pairs."""
    stop = search_stopwords(detect_question(query))
    out: dict[str, str] = {}
    for t in tokens(query):
        if t in stop:
            continue
        for piece, cjk in pieces(t):
            if cjk:
                for run in cjk_query_runs(piece):
                    for pair in bigrams(run):
                        out.setdefault(pair, pair)
            else:
                out.setdefault(stem(piece), piece)
        if len(out) >= MAX_TERMS:
            break
    return out


def passage_terms(title: str, heading: str, text: str) -> set[str]:
    return {w if cjk else stem(w) for t in tokens(f"{title} {heading} {text}") for w, cjk in _words(t)}


def row_text(row: Mapping[str, object], key: str) -> str:
    """A chunk row's text column (title, heading, text): "" where it is missing or empty; a value that is
    not text is a TypeError (it was one before, where it was used as text)."""
    value = row.get(key) or ""
    if not isinstance(value, str):
        raise TypeError(f"chunk row {key!r} is {type(value).__name__}, not text")
    return value


def term_coverage(query: str, rows: Sequence[Mapping[str, object]],
                  doc_freqs: Callable[[list[str]], dict[str, int]], total: int) -> list[float]:
    """For each chunk row (title, heading, text): the IDF-weighted share of the question's words it
    holds, in [0, 1]; all 0.0 when the question has no content word.

    doc_freqs: rows of the index holding each word (as typed); total: the index's row count."""
    terms = question_terms(query)
    if not terms or not rows:
        return [0.0] * len(rows)
    df = doc_freqs(sorted(set(terms.values())))
    weight = {s: math.log(1 + total / (1 + df.get(w, 0))) for s, w in terms.items()}
    whole = sum(weight.values()) or 1.0
    out = []
    for r in rows:
        have = passage_terms(row_text(r, "title"), row_text(r, "heading"), row_text(r, "text"))
        out.append(sum(w for s, w in weight.items() if s in have) / whole)
    return out
