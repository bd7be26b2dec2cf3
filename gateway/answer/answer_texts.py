"""The answer's own words in the question's language (issue 47 item 4): the not-found notices, a refusal
after generation, and what `/v1` adds to a chat reply (the evidence note, "Sources:").

A Chinese or German technician who asks through a chat client reads no page in their language: the
answer's text is all they see. So these texts follow the question's language (ingest.text.languages'
detect_question), from the same catalogue per language as the pages (gateway.catalogues: the "answer."
keys, and the pages' own names of the value kinds, "tech.kind.*"); a question in any other language gets
English. The English texts are the ones integrators and replays have always read, word for word.
"""

from __future__ import annotations

from gateway.catalogues import LANGUAGES, catalogue
from ingest.text.languages import detect_question


def text_language(question: str) -> str:
    """The catalogue a question's answer speaks: its own language where there is one, else English."""
    lang = detect_question(question or "")
    return lang if lang in LANGUAGES else "en"


def say(key: str, question: str, **values: object) -> str:
    """The catalogue's "answer.<key>" in the question's language, its {placeholders} filled."""
    text = catalogue(text_language(question))[f"answer.{key}"]
    for name, value in values.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def _kinds(kinds: list[str], question: str) -> str:
    """"a voltage or current" in English (one article, as always); the pages' kind names in the others."""
    lang = text_language(question)
    if lang == "en":
        words = " or ".join(kinds)
        return ("an " if words[:1].lower() in "aeiou" or words.startswith("IP") else "a ") + words
    strings = catalogue(lang)
    return strings["tech.kinds_or"].join(strings.get(f"tech.kind.{k.replace(' ', '_')}", k) for k in kinds)


def not_found_text(question: str, passages: bool = True) -> str:
    """Weak evidence: the manuals do not cover the question (the closest passages listed, where any)."""
    return say("not_found", question) if passages else say("no_passage", question)


def quantity_not_found_text(kinds: list[str], manual: str | None, question: str = "") -> str:
    """The passages state no value of the asked kinds; `manual` the one they come from."""
    return say("unstated", question, kinds=_kinds(kinds, question), manual=manual or say("the_manuals", question))


def value_apart_text(kinds: list[str], manual: str | None, question: str = "") -> str:
    """The passages state a value of the asked kind, but for nothing else the question names."""
    return say("apart", question, kinds=_kinds(kinds, question), manual=manual or say("the_manuals", question))
