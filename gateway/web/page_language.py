"""The pages in the technician's language (issue 47): one string catalogue per language, the language
chosen per request, and the page's template filled in on the server.

The catalogues are ui/templates/strings.<lang>.json (read by gateway.catalogues), the same keys in each
(tests/test_page_languages.py).
They sit beside the templates because the wheel ships ui/templates/* as package data. A template names
a string as {{key}}: its value is HTML-escaped, except for keys ending in "_html" (trusted markup such as
<code>). The strings the page's scripts need go into the page as JSON (<script id="i18n">), read by
ui/static/i18n.js; so a page and its scripts speak one language, and nothing is fetched from elsewhere.

The language: ?lang=xx (then remembered in a cookie), else the cookie the page's switch sets, else the
browser's Accept-Language (zh*, de*, en*, by its q order), else English.
"""

from __future__ import annotations

import html
import json
import re

from gateway.catalogues import DEFAULT, LANGUAGES, TEMPLATES_DIR, Catalogues, catalogue, catalogue_path

__all__ = ["AUTONYMS", "COOKIE", "COOKIE_MAX_AGE_S", "DEFAULT", "HTML_LANG", "LANGUAGES", "PAGE_PREFIX",
           "TEMPLATES_DIR", "Catalogues", "catalogue", "catalogue_path", "choose", "from_accept_language",
           "language_of", "page_strings", "render", "switch_options"]

COOKIE = "manualqa_lang"
COOKIE_MAX_AGE_S = 365 * 24 * 3600
# Each language's own name in the switch: a technician finds theirs whatever the page is in now.
AUTONYMS = {"en": "English", "de": "Deutsch", "zh": "中文"}
# <html lang>: zh-CN, so that browsers pick Simplified Chinese glyphs.
HTML_LANG = {"en": "en", "de": "de", "zh": "zh-CN"}
# The keys each page's scripts need, besides common.*: its own prefix.
PAGE_PREFIX = {"index.html": "tech.", "admin.html": "admin.", "viewer.html": "viewer."}

PLACEHOLDER = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")
_Q = re.compile(r"^\s*q\s*=\s*([0-9.]+)\s*$", re.I)


def language_of(tag: str | None) -> str | None:
    """'zh-CN', 'zh_Hans', 'ZH' -> 'zh'; a language the pages are not written in -> None."""
    primary = re.split(r"[-_]", (tag or "").strip().lower(), maxsplit=1)[0]
    return primary if primary in LANGUAGES else None


def from_accept_language(header: str | None) -> str | None:
    """The first language of ours in the browser's preference order (q weights, then listed order)."""
    ranked: list[tuple[float, int, str]] = []
    for i, part in enumerate((header or "").split(",")):
        tag, *params = part.split(";")
        q = 1.0
        for p in params:
            m = _Q.match(p)
            if m:
                try:
                    q = float(m.group(1))
                except ValueError:
                    q = 0.0
        lang = language_of(tag)
        if lang and q > 0:
            ranked.append((-q, i, lang))
    return min(ranked)[2] if ranked else None


def choose(query: str | None, cookie: str | None, accept_language: str | None) -> str:
    return language_of(query) or language_of(cookie) or from_accept_language(accept_language) or DEFAULT


def switch_options(lang: str) -> str:
    return "".join(f'<option value="{code}" lang="{HTML_LANG[code]}"{" selected" if code == lang else ""}>'
                   f"{html.escape(AUTONYMS[code])}</option>" for code in LANGUAGES)


def page_strings(name: str, strings: dict[str, str]) -> dict[str, str]:
    prefixes = ("common.", PAGE_PREFIX.get(name, "common."))
    return {k: v for k, v in strings.items() if k.startswith(prefixes)}


def render(name: str, lang: str, catalogues: Catalogues | None = None) -> str:
    """Template `name` (index.html, admin.html, viewer.html) in `lang`, its strings through `catalogues`
    (the app's; None: read now); a key missing from the catalogue is a KeyError (the catalogue test
    finds it before a technician does)."""
    strings = catalogue(lang, catalogues)
    special = {
        "page.lang": HTML_LANG[lang],
        "page.code": lang,
        "page.languages": switch_options(lang),
        # "<" escaped: the JSON sits in a <script> element, which only "</script" could end early
        "page.strings": json.dumps(page_strings(name, strings), ensure_ascii=False).replace("<", "\\u003c"),
    }

    def fill(m: re.Match[str]) -> str:
        key = m.group(1)
        if key in special:
            return special[key]
        value = strings[key]
        return value if key.endswith("_html") else html.escape(value, quote=True)

    return PLACEHOLDER.sub(fill, (TEMPLATES_DIR / name).read_text(encoding="utf-8"))
