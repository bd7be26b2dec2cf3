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
from ingest.text.stemming import ALGORITHMS
from ingest.text.stemming import stem as snowball
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


def own_stemmer(language: str) -> Callable[[str], str]:
    """The stem the question's language gives its words where Snowball has a stemmer for it other than
    English's (German "Lötspitzen" and "Lötspitze" alike, which the light English strip keeps apart);
    else the light strip (English, and the Latin words beside CJK text)."""
    if language == "en" or language not in ALGORITHMS:
        return stem
    return lambda word: snowball(word, language)


def question_terms(query: str, stemmer: Callable[[str], str] = stem) -> dict[str, str]:
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
                out.setdefault(stemmer(piece), piece)
        if len(out) >= MAX_TERMS:
            break
    return out


def passage_terms(title: str, heading: str, text: str, stemmer: Callable[[str], str] = stem) -> set[str]:
    return {w if cjk else stemmer(w) for t in tokens(f"{title} {heading} {text}") for w, cjk in _words(t)}


def row_text(row: Mapping[str, object], key: str) -> str:
    """A chunk row's text column (title, heading, text): "" where it is missing or empty; a value that is
    not text is a TypeError (it was one before, where it was used as text)."""
    value = row.get(key) or ""
    if not isinstance(value, str):
        raise TypeError(f"chunk row {key!r} is {type(value).__name__}, not text")
    return value


def term_coverage(query: str, rows: Sequence[Mapping[str, object]],
                  doc_freqs: Callable[[list[str]], dict[str, int]], total: int,
                  stemmer: Callable[[str], str] = stem) -> list[float]:
    """For each chunk row (title, heading, text): the IDF-weighted share of the question's words it
    holds, in [0, 1]; all 0.0 when the question has no content word.

    doc_freqs: rows of the index holding each word (as typed); total: the index's row count.
    stemmer: how words of the question and the passages are compared (own_stemmer for the share the
    answer's not-found check reads)."""
    terms = question_terms(query, stemmer)
    if not terms or not rows:
        return [0.0] * len(rows)
    df = doc_freqs(sorted(set(terms.values())))
    weight = {s: math.log(1 + total / (1 + df.get(w, 0))) for s, w in terms.items()}
    whole = sum(weight.values()) or 1.0
    out = []
    for r in rows:
        have = passage_terms(row_text(r, "title"), row_text(r, "heading"), row_text(r, "text"), stemmer)
        out.append(sum(w for s, w in weight.items() if s in have) / whole)
    return out


def own_language_coverage(query: str, rows: Sequence[Mapping[str, object]],
                          doc_freqs: Callable[[list[str]], dict[str, int]], total: int) -> list[float] | None:
    """term_coverage with the question language's own stemmer, for the share the answer's not-found check
    reads (gateway.answer.evidence_strength); None where that stemmer is the light strip (English, CJK).
    The ranking keeps the light strip: with German's stemmer there, eval/de-dev and de-dev2 lost 3 of 67
    first places; in the check it stopped 2 of 67 answerable German questions being refused and refused
    no unanswerable one fewer (docs/bench/experiments/own_stemmer_share.md)."""
    stemmer = own_stemmer(detect_question(query))
    if stemmer is stem:
        return None
    return term_coverage(query, rows, doc_freqs, total, stemmer)
