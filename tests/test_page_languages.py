"""The pages' strings (issue 47, item 4): one catalogue per language (ui/templates/strings.<lang>.json) with
the same keys and the same {placeholders}; every key a page or script names exists, every key is named
somewhere; no page template and no page script shows a sentence of its own outside the catalogue (as
far as a scan of the source can tell: text between tags, the attributes a person reads, string literals
that read as words); the language a request gets. Fast: no server, no browser (those are in
tests/test_page_languages_browser.py)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gateway.web import page_language
from gateway.web.page_language import LANGUAGES, catalogue, choose, render

UI = Path(__file__).resolve().parent.parent / "ui"
PAGES = ("index.html", "admin.html", "viewer.html")
SCRIPTS = ("i18n.js", "app.js", "admin.js", "admin_ops.js", "viewer.js", "admin_unanswered.js", "admin_status.js",
           "admin_trial.js", "admin_log.js", "admin_index.js", "admin_time.js")
PLACEHOLDER = re.compile(r"\{(\w+)\}")
GATEWAY = Path(__file__).resolve().parent.parent / "gateway"
ANSWER_TEXT_USERS = (GATEWAY / "answer" / "answer_texts.py", GATEWAY / "answer" / "outcome.py",
                     GATEWAY / "web" / "openai_replies.py")
# Text a page shows that is the same in every language: the product's name, identifiers, the outcome
# codes of the answer log's filter (the API's vocabulary), input syntax, example key names.
SAME_IN_EVERY_LANGUAGE = {"manualqa", "sha256", "kiosk-3", "7d, 12h, 2026-11-01…", "answered", "evidence_only",
                          "not_found", "error", "cancelled"}
# String literals in the scripts that are code, not words: CSS classes, a gate status code of the API.
CODE_LITERALS = {"use strict", "badge evidence", "badge cancelled", "badge error", "highlight part", "not run"}


def keys_used() -> tuple[dict[str, set[str]], set[str]]:
    """{key: files naming it} and the prefixes of keys built at run time (t(`tech.flag.${name}`))."""
    used: dict[str, set[str]] = {}
    prefixes: set[str] = set()
    for name in PAGES:
        for key in re.findall(r"\{\{\s*([\w.]+)\s*\}\}", (UI / "templates" / name).read_text(encoding="utf-8")):
            if not key.startswith("page."):
                used.setdefault(key, set()).add(name)
    for name in SCRIPTS:
        src = re.sub(r"(^|\s)//[^\n]*", r"\1", (UI / "static" / name).read_text(encoding="utf-8"))
        for key in re.findall(r"""\b(?:t|tHtml)\(\s*["']([\w.]+)["']""", src):
            used.setdefault(key, set()).add(name)
        # keys picked by an expression: each string literal that looks like a key (a ? "a.b" : "a.c")
        for key in re.findall(r"""["']((?:common|tech|admin|viewer)\.[\w.]+)["']""", src):
            used.setdefault(key, set()).add(name)
        prefixes.update(re.findall(r"`((?:common|tech|admin|viewer)\.[\w.]*)\$\{", src))
    # the answer's own words (gateway.answer.answer_texts): say("not_found", question) names "answer.not_found"
    for path in ANSWER_TEXT_USERS:
        for key in re.findall(r"""\bsay\(\s*["'](\w+)["']""", path.read_text(encoding="utf-8")):
            used.setdefault(f"answer.{key}", set()).add(path.name)
    return used, prefixes


def test_the_three_catalogues_have_the_same_keys_and_placeholders() -> None:
    cats = {lang: catalogue(lang) for lang in LANGUAGES}
    assert set(LANGUAGES) == {"en", "de", "zh"}
    en = cats["en"]
    assert len(en) > 250
    for lang, cat in cats.items():
        assert set(cat) - set(en) == set(), f"{lang} has keys English lacks"
        assert set(en) - set(cat) == set(), f"{lang} lacks keys"
        for key, value in cat.items():
            assert set(PLACEHOLDER.findall(value)) == set(PLACEHOLDER.findall(en[key])), (lang, key, value)
            if key.endswith("_html"):
                assert re.findall(r"</?\w+", value) == re.findall(r"</?\w+", en[key]), (lang, key)
            if value.strip() == "" and key != "viewer.page_after":
                raise AssertionError(f"{lang}: {key} is empty")
    # translated, not copied: the technician's words differ from English in each
    for lang in ("de", "zh"):
        same = [k for k, v in cats[lang].items() if v == en[k] and re.search(r"[a-z]{3} [a-z]{3}", v)]
        assert same == [], f"{lang} copies English: {same}"
    assert cats["zh"]["tech.ask"] == "提问" and cats["de"]["tech.ask"] == "Fragen" and en["tech.ask"] == "Ask"
    assert "ü" in cats["de"]["tech.all_manuals"]  # proper German, umlauts and all


def test_every_key_named_exists_and_every_key_is_named() -> None:
    used, prefixes = keys_used()
    en = catalogue("en")
    missing = {k: sorted(files) for k, files in used.items() if k not in en}
    assert missing == {}, f"named in a page or script, missing from the catalogue: {missing}"
    unused = [k for k in en if k not in used and not k.startswith(tuple(prefixes))]
    assert unused == [], f"catalogue keys no page or script names: {unused}"
    assert "tech.flag." in prefixes and "common.lang." in prefixes


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", PAGES)
def test_each_page_renders_in_each_language(name: str, lang: str) -> None:
    html = render(name, lang)
    assert "{{" not in html and f'data-lang="{lang}"' in html
    assert f'<html lang="{page_language.HTML_LANG[lang]}"' in html
    strings = json.loads(re.search(r'<script id="i18n" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert strings["common.language"] == catalogue(lang)["common.language"]
    assert '<select id="lang"' in html
    assert f'<option value="{lang}" lang="{page_language.HTML_LANG[lang]}" selected>' in html


class _Text(HTMLParser):
    """Text a person reads in a template: between tags (not in <script>/<style>) and in the attributes
    read out or shown (title, placeholder, aria-label, alt, label)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        for name, value in attrs:
            if name in ("title", "placeholder", "aria-label", "alt", "label") and value:
                self.found.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.found.append(data.strip())


def words_outside(text: str) -> str:
    """What is left of `text` once the catalogue's placeholders, markup and punctuation are gone."""
    text = re.sub(r"\{\{\s*[\w.]+\s*\}\}", " ", text)
    return re.sub(r"[\s\u00a0.,:;()\[\]…·—–\-‹›→/|]+", " ", text).strip()


@pytest.mark.parametrize("name", PAGES)
def test_templates_show_no_text_outside_the_catalogue(name: str) -> None:
    parser = _Text()
    parser.feed((UI / "templates" / name).read_text(encoding="utf-8"))
    left = [t for t in parser.found if words_outside(t) and t not in SAME_IN_EVERY_LANGUAGE]
    assert left == [], f"{name}: text outside the catalogue: {left}"


def js_strings(src: str) -> list[tuple[str, str]]:
    """The string literals of a script, each as (text, the source just before it): a template literal's
    text has each ${...} as one space, and the literals inside its expressions come separately. A small
    scanner that knows comments, regex literals and nested templates: enough for the pages' scripts."""
    found: list[tuple[str, str]] = []
    n = len(src)
    last = ""  # the last significant character outside strings: "/" after it starts a regex or a division

    def template(i: int) -> tuple[str, int]:  # from after the opening backtick to after the closing one
        text = []
        while i < n and src[i] != "`":
            if src[i] == "\\":
                text.append(src[i:i + 2])
                i += 2
            elif src.startswith("${", i):
                text.append(" ")
                i = code(i + 2, "}")
            else:
                text.append(src[i])
                i += 1
        return "".join(text), i + 1

    def code(i: int, until: str | None) -> int:  # scan code to the brace that closes it
        nonlocal last
        depth = 0
        while i < n:
            c = src[i]
            if src.startswith("//", i):
                i = src.find("\n", i) if "\n" in src[i:] else n
            elif src.startswith("/*", i):
                i = src.index("*/", i) + 2
            elif c in "\"'":
                j = i + 1
                while src[j] != c:
                    j += 2 if src[j] == "\\" else 1
                found.append((src[i + 1:j], src[max(0, i - 40):i]))
                i, last = j + 1, "a"
            elif c == "`":
                start = i
                text, i = template(i + 1)
                found.append((text, src[max(0, start - 40):start]))
                last = "a"
            elif c == "/" and (last in "(,=:[!&|?{};+-*%<>~^" or re.search(r"\b(return|typeof)\s*$", src[:i])):
                j = i + 1  # a regex literal: to its closing slash (classes may hold one)
                in_class = False
                while src[j] != "/" or in_class:
                    if src[j] == "\\":
                        j += 1
                    elif src[j] == "[":
                        in_class = True
                    elif src[j] == "]":
                        in_class = False
                    j += 1
                i, last = j + 1, "a"
            else:
                if c == "{":
                    depth += 1
                elif c == "}":
                    if depth == 0 and until == "}":
                        return i + 1
                    depth -= 1
                if not c.isspace():
                    last = c
                i += 1
        return i

    code(0, None)
    return found


def _shown_words(text: str) -> str:
    """The words of a literal a page would show: not its tags, entities, keys, paths or URLs."""
    text = re.sub(r"<[^>]*>", " ", re.sub(r"&\w+;", " ", text))
    return " ".join(w for w in text.split() if w not in SAME_IN_EVERY_LANGUAGE and not re.search(r"\w[./=?&]", w))


def prose_in(src: str) -> list[str]:
    """String literals in a script that read as words a person would see."""
    found = []
    for literal, before in js_strings(src):
        if literal in CODE_LITERALS or re.search(r"(console\.\w+|querySelector(All)?|closest|matches)\(\s*$", before):
            continue  # code, a CSS selector, or a message for the developer's console
        words = _shown_words(literal)
        if not re.search(r"[^\W\d_]{2,}", words):
            continue
        # one word shown on its own: assigned to what a person reads, or said in a dialog or a status line
        if re.search(r"(textContent|innerText|title|placeholder)\s*=\s*$|\b(say|confirm|prompt|alert|Error)\(\s*$",
                     before):
            found.append(literal)
        elif re.fullmatch(r"[\w.]*", literal):
            continue  # a key, an id, a class, one code word
        elif re.search(r"<\w", literal) or re.search(r"[A-Za-z]{2,}[ ,:;!?]+[A-Za-z]{2,}", words) \
                or re.search(r"[A-Za-z]{3,}[.!?…]$", words):
            found.append(literal)  # HTML with a word between its tags, or words in a row, or a sentence
    return found


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_show_no_words_outside_the_catalogue(name: str) -> None:
    prose = prose_in((UI / "static" / name).read_text(encoding="utf-8"))
    assert prose == [], f"{name}: strings a person would read, not from the catalogue: {prose}"


def test_the_scan_finds_what_it_is_for() -> None:
    """The scanner itself: an English sentence, a word between tags and a lone status word are caught;
    catalogue calls, ids, classes and URLs are not."""
    assert prose_in('x.textContent = "Thank you — feedback saved.";')
    assert prose_in("div.innerHTML = `<td>${esc(a)}</td><td>none</td>`;")
    assert prose_in('$("meta").textContent = "answering";')
    assert prose_in('say(`Loading page ${n}…`);')
    assert not prose_in('x.textContent = t("tech.feedback_saved"); // says "Thank you, saved."')
    assert not prose_in('div.innerHTML = `<a class="button secondary" href="${url}">${esc(t("tech.whole_pdf"))}</a>`;')
    assert not prose_in('fetch("/api/v1/manuals", {headers: {"Content-Type": "application/json"}});')
    assert words_outside("{{tech.ask}} — ") == "" and words_outside("Ask {{tech.ask}}") == "Ask"


@pytest.mark.parametrize(("query", "cookie", "accept", "lang"), [
    (None, None, None, "en"),  # no header: English, as the other browser tests expect
    (None, None, "zh-CN,zh;q=0.9,en;q=0.8", "zh"),
    (None, None, "de-DE,de;q=0.9", "de"),
    (None, None, "fr-FR,fr;q=0.9", "en"),
    (None, None, "fr-FR, de;q=0.7, en;q=0.5", "de"),  # the first of ours in the browser's order
    (None, None, "en;q=0.5, zh-TW", "zh"),
    (None, None, "de;q=0, en", "en"),  # q=0: "not German"
    (None, "de", "zh-CN", "de"),  # the switch's choice beats the browser's
    ("zh", "de", "en", "zh"),  # ?lang= beats both
    ("xx", "bogus", "de", "de"),
])
def test_the_language_a_request_gets(query: str | None, cookie: str | None, accept: str | None, lang: str) -> None:
    assert choose(query, cookie, accept) == lang
