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
          "oder auch sich wenn aus kann nach wie ich sind durch über vor nur muss können "
          # a technician's short question names few of those ("Welche Jumper müssen am Schluss gesteckt sein?"
          # was read as English): its question words and modals, none of them English words
          "welche welcher welches welchen warum wieso weshalb woran womit wofür wozu müssen sollte sollen darf "
          "dürfen beim zum zur einem einer kein keine noch schon",
    "fr": "le les et est des du une pour dans qui sur avec pas ce au par vous sont être",
    "es": "el los las del una para que por como está son puede",
    "it": "gli della delle è che sono questo nella alla",
    "nl": "het een van niet met voor dat zijn wordt aan bij naar ook",
    "pt": "uma com não são é",
}
# Left out on purpose: words that English technical text holds too ("Y" an axis, "no", "do", "is", "Si",
# "non-volatile"), so that a table of an English manual is never taken for Spanish or Portuguese.
_WORD_LANG: dict[str, str] = {}
for _lang, _words in _PROFILE.items():
    for _w in _words.split():
        _WORD_LANG.setdefault(_w, _lang)
_WORD = re.compile(r"[^\W\d_]+")

MIN_CJK = 2  # Han/kana/Hangul characters that make a passage CJK by themselves
MIN_HITS = 2  # function words needed to name a Latin-script language
MIN_OTHER = 4  # ... and to name another one than the language around the text


def detect(text: str, prior: str | None = None) -> str | None:
    """ISO 639-1 code of the text's language, or None when the text does not say.

    prior: the language around the text (its page's, its manual's). A Latin-script text is taken for
    another language than the prior only on clear evidence (MIN_OTHER function words, twice the prior's);
    a script (Han, kana, Hangul, Cyrillic) is evidence enough; a text that does not say is the prior's."""
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
    for word in _WORD.findall(text):
        if len(word) > 1 and word.isupper():
            continue  # a code or an abbreviation ("VB-EL-01", "DIE"), not a function word
        lang = _WORD_LANG.get(word.lower())
        if lang:
            hits[lang] = hits.get(lang, 0) + 1
    if not hits:
        return prior
    ranked = sorted(hits.items(), key=lambda kv: -kv[1])
    best, n = ranked[0]
    if prior is not None and best != prior:
        return best if n >= MIN_OTHER and n >= 2 * hits.get(prior, 0) + 1 else prior
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    if n < MIN_HITS and not (n == 1 and runner_up == 0 and len(_WORD.findall(text)) <= 12):
        return prior  # one function word decides a question or a line, not a page
    return best if n > runner_up else prior


def detect_question(text: str, default: str = "en") -> str:
    """A question's language: a short question is often one function word from being undecided,
    and an undecided question is read as `default` (English: its stop words are dropped anyway)."""
    return detect(text) or default


def name(code: str) -> str:
    return NAMES.get(code, code)
