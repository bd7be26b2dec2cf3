"""One stemmer per European language (Snowball's), the same on the indexed and the asked side.

English uses Snowball's rendition of the original Porter algorithm, which is what SQLite's
``porter`` tokenizer applied before index versions kept analysed text, so English search keeps its
behaviour. CJK text is not stemmed (it is cut into character pairs, ingest.text.terms); the Latin words
among it are stemmed as English.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

ALGORITHMS = {"en": "porter", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
              "nl": "dutch", "pt": "portuguese", "ru": "russian"}
_lock = threading.Lock()  # snowballstemmer's stemmers keep state between calls


@cache
def _stemmer(language: str) -> Callable[[str], str] | None:
    algorithm = ALGORITHMS.get(language)
    if algorithm is None:
        return None
    try:
        import snowballstemmer  # type: ignore[import-untyped]  # ships no type information
    except ImportError as exc:  # pragma: no cover - a dependency of manualqa
        raise ImportError("manualqa needs snowballstemmer for its search in European languages: "
                          "pip install snowballstemmer") from exc
    stemmer = snowballstemmer.stemmer(algorithm)

    def stem(word: str) -> str:
        with _lock:
            return str(stemmer.stemWord(word))

    return stem


def fold(word: str) -> str:
    """Diacritics removed ("ü" -> "u"), as SQLite's unicode61 remove_diacritics does."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=65536)
def stem(word: str, language: str) -> str:
    """`word` (lower case) reduced to its stem in `language`; words with digits and words of
    languages without a stemmer are returned as they are. English folds diacritics first (as the
    old porter tokenizer did); the others stem first, since their stemmers read the umlauts."""
    if any(ch.isdigit() for ch in word):
        return word
    stemmer = _stemmer(language)
    if stemmer is None and word.isascii():
        # a Latin word in a Chinese, Japanese or Korean passage is English ("interrupts", "Flash"): stemmed
        # as English, as an English question's words are (this changed no figure of the zh halves)
        language, stemmer = "en", _stemmer("en")
    if stemmer is None:
        return word
    if language == "en":
        return stemmer(fold(word))
    return stemmer(word)
