"""Which language a passage or a question is written in, without a model.

Equipment manuals are dense with part numbers, values and English loan words, and a question is a
handful of words, so a statistical detector trained on prose guesses wildly on them. Two signals
that hold on such text: the script (Han, kana, Hangul, Cyrillic decide by themselves) and, for the
Latin-script languages, their function words ("der", "und", "mit"; "le", "et", "pour"), which a
sentence cannot avoid and a part number never contains. Too little of either: None, and the caller
falls back to the page's or the manual's language (ingest.chunker), then English.
"""

from __future__ import annotations

import re

from ingest.text.scripts import script_counts

LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "pt", "ru", "zh", "ja", "ko")
NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "nl": "Dutch",
         "pt": "Portuguese", "ru": "Russian", "zh": "Chinese", "ja": "Japanese", "ko": "Korean"}

# The most frequent function words of each language, kept to words that are rare in the others
# (no "a", "in", "de", "die" twice): a word counts for one language only.
_PROFILE = {
    "en": "the and of to is are for with this that you your be by from can will not it or if when on which",
    "de": "der die das und ist nicht mit den dem des ein eine einen zu für von auf im sie es wird werden bei "
          "oder auch sich wenn aus kann nach wie ich sind durch über vor nur muss können",
    "fr": "le la les et est des du un une pour dans que qui sur avec pas ne ce au par vous il sont être",
    "es": "el los las y es del una para con que por se no al lo su como está son puede",
    "it": "il lo gli della delle di è con che non si da sono questo nella alla",
    "nl": "het een en van is niet met voor op te dat zijn wordt aan bij naar ook kan",
    "pt": "os do da um uma para com que não em no na se por são é",
}
_WORD_LANG: dict[str, str] = {}
for _lang, _words in _PROFILE.items():
    for _w in _words.split():
        _WORD_LANG.setdefault(_w, _lang)
_WORD = re.compile(r"[^\W\d_]+")

MIN_CJK = 2  # Han/kana/Hangul characters that make a passage CJK by themselves
MIN_HITS = 2  # function words needed to name a Latin-script language


def detect(text: str) -> str | None:
    """ISO 639-1 code of the text's language, or None when the text does not say."""
    counts = script_counts(text)
    cjk = counts["han"] + counts["kana"] + counts["hangul"]
    # One CJK character carries about a word: a passage is CJK when its CJK characters outnumber
    # the Latin words around them (a Chinese sentence with "USB" and "5V" in it is Chinese).
    latin_words = counts["latin"] / 5.0
    if cjk >= MIN_CJK and cjk >= latin_words:
        if counts["kana"] >= max(2, 0.1 * cjk):
            return "ja"
        if counts["hangul"] > counts["han"]:
            return "ko"
        return "zh"
    if counts["cyrillic"] > counts["latin"] and counts["cyrillic"] >= 3:
        return "ru"
    hits: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        lang = _WORD_LANG.get(word)
        if lang:
            hits[lang] = hits.get(lang, 0) + 1
    if not hits:
        return None
    ranked = sorted(hits.items(), key=lambda kv: -kv[1])
    best, n = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    if n < MIN_HITS and not (n == 1 and runner_up == 0 and len(_WORD.findall(text)) <= 12):
        return None  # one function word decides a question or a line, not a page
    return best if n > runner_up else None


def detect_question(text: str, default: str = "en") -> str:
    """A question's language: a short question is often one function word from being undecided,
    and an undecided question is read as `default` (English: its stop words are dropped anyway)."""
    return detect(text) or default


def name(code: str) -> str:
    return NAMES.get(code, code)
