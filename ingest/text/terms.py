"""Text -> terms: what the lexical index stores, what a question searches, what evidence compares.

Latin, Cyrillic and other space-separated scripts: letter/digit runs, lower-cased, stemmed with the
language's stemmer. Chinese, Japanese and Korean: each run of their characters cut into overlapping
character pairs ("最大电流" -> 最大 大电 电流), the segmenter-free fallback DESIGN.md names; on the
Chinese development questions it is what lifts lexical search from nothing to most of the way
(docs/bench/languages.md). A one-character run stays one term.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ingest.text.scripts import CJK_RUN, join_cjk_lines
from ingest.text.stemming import stem
from ingest.text.stopwords import EVIDENCE, JA, ZH

# Letters and digits; everything else (punctuation, "_", symbols, emoji) separates tokens, which is
# what SQLite's unicode61 tokenizer does on the indexed side.
TOKEN = re.compile(r"[^\W_]+")
_CJK_STOP = re.compile("|".join(sorted(map(re.escape, set(ZH) | set(JA)), key=len, reverse=True)))
_EVIDENCE_WORD = re.compile(r"[a-z0-9][a-z0-9\-_.]*[a-z0-9]|[a-z0-9]")
_EVIDENCE_WORD_WIDE = re.compile(r"[^\W_][\w\-.]*[^\W_]|[^\W_]")


def normalize(text: str) -> str:
    """NFKC folds PDF ligatures ("ﬁ" -> "fi") and full-width forms; used on both index and query."""
    return unicodedata.normalize("NFKC", text)


def tokens(text: str) -> list[str]:
    """Lower-cased letter/digit runs, as the indexed side sees them (a CJK run is one token here,
    also where the PDF wrapped its line)."""
    return [t.lower() for t in TOKEN.findall(join_cjk_lines(normalize(text)))]


def pieces(token: str) -> list[tuple[str, bool]]:
    """A token split into its CJK runs and the rest: "电机m3驱动" -> [(电机, True), (m3, False), (驱动, True)]."""
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in CJK_RUN.finditer(token):
        if m.start() > pos:
            out.append((token[pos:m.start()], False))
        out.append((m.group(), True))
        pos = m.end()
    if pos < len(token):
        out.append((token[pos:], False))
    return out


def bigrams(run: str) -> list[str]:
    """Overlapping character pairs of a CJK run; a single character stays itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i:i + 2] for i in range(len(run) - 1)]


def has_cjk(text: str) -> bool:
    return bool(CJK_RUN.search(text))


# Words glued by a text layer that lost its spaces ("kosmischenStrahlung", "PulseFilter"): a lower-case
# letter followed by a capital is a word boundary that the index also reads as one.
_GLUED = re.compile(r"(?<=[a-zäöüßàâçéèêëîïôûù])(?=[A-ZÄÖÜÀÂÇÉÈÊÎÔÛ])")
MIN_GLUED_PART = 3


def _glued_parts(piece: str) -> list[str]:
    parts = _GLUED.split(piece)
    return parts if len(parts) > 1 and all(len(p) >= MIN_GLUED_PART for p in parts) else []


def index_terms(text: str, language: str) -> list[str]:
    """The terms the lexical index stores for `text` (a chunk in `language`), in order. A token glued
    from capitalised words is stored whole and as its words ("PulseFilter": pulsefilt, puls, filter),
    so a question's "Filter" finds it."""
    out: list[str] = []
    for token in TOKEN.findall(join_cjk_lines(normalize(text))):
        for piece, cjk in pieces(token):
            if cjk:
                out.extend(bigrams(piece))
                continue
            out.append(stem(piece.lower(), language))
            out.extend(stem(part.lower(), language) for part in _glued_parts(piece))
    return out


def index_text(text: str, language: str) -> str:
    """index_terms joined by spaces: the column SQLite's unicode61 tokenizer then splits again."""
    return " ".join(index_terms(text, language))


def cjk_query_runs(run: str) -> list[str]:
    """A question's CJK run cut at its question words and particles (stopwords.ZH, JA)."""
    return [part for part in _CJK_STOP.split(run) if part]


def term_variants(word: str, languages: Iterable[str]) -> list[str]:
    """A question's (non-CJK) word as each of the index's languages stems it, without repeats."""
    return list(dict.fromkeys(stem(word, lang) for lang in languages))


def content_terms(text: str, stopwords: frozenset[str] = EVIDENCE) -> set[str]:
    """The words evidence is compared by: lower-cased, a plural "s" dropped, stop words left out;
    CJK runs as character pairs. Text in the Latin alphabet without accents gets exactly the terms it
    always got (the English replays' answers are byte-identical); other letters ("Auflösung") are
    letters, not separators."""
    lowered = text.lower()
    ascii_only = lowered.isascii()
    if not ascii_only:
        lowered = join_cjk_lines(lowered)
    terms: set[str] = set()
    for w in (_EVIDENCE_WORD if ascii_only else _EVIDENCE_WORD_WIDE).findall(lowered):
        if not ascii_only and has_cjk(w):
            for piece, cjk in pieces(w):
                if cjk:
                    terms.update(b for part in cjk_query_runs(piece) for b in bigrams(part))
                elif piece:
                    terms.update(_evidence_word(piece, stopwords))
            continue
        terms.update(_evidence_word(w, stopwords))
    return terms


def _evidence_word(w: str, stopwords: frozenset[str]) -> set[str]:
    if w in stopwords or len(w) < 2 and not w.isdigit():
        return set()
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w}


def word_count(text: str) -> int:
    """Words in `text`, where a CJK character is half a word (a Chinese word is one to three
    characters): the evidence's "too short to be a sentence" and a sentence's length read it, so a
    Chinese sentence of 12 characters counts like an English one of 6 words. Text without CJK: split()."""
    if not has_cjk(text):
        return len(text.split())
    cjk = sum(len(m.group()) for m in CJK_RUN.finditer(text))
    return len(CJK_RUN.sub(" ", text).split()) + (cjk + 1) // 2
