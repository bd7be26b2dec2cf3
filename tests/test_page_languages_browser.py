"""The pages in the technician's language (issue 47, item 4), in Debian's chromium against a real gateway:
a browser that asks for Chinese gets the technician page in Chinese; the switch to German is remembered
across a reload (and a lost cookie is restored from localStorage; ?lang= works too); the admin page and
the viewer follow the choice; and the acceptance scenario: on the Chinese admin page a Chinese manual
(generated here: STSong-Light, not embedded, a running header and footer) is uploaded, and on the
Chinese technician page a Chinese question about it cites the right manual and page with Chinese
evidence, which the viewer opens at that page in Chinese; on the English or German page the same card
says that its passage is in Chinese. Strings and keys: tests/test_page_languages.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.support.browser import WAIT_MS
from tests.support.pdfs import multilingual_pdf
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_browser import shot
from tests.test_languages import ZH_HEADER, ZH_PAGES, _with_furniture
from tests.test_viewer import PHONE, rendered
from ui.vendor_pdfjs import DEST, VERSION, is_current

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]
DESK = {"viewport": {"width": 1280, "height": 900}}
CHINESE = {"locale": "zh-CN", "extra_http_headers": {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"}}
ZH_NAME = "bldc300_zh.pdf"
ZH_QUESTION = "驱动器的输入电压范围是多少？"
FINAL = "#outcome.answered, #outcome.evidence_only, #outcome.not_found, #outcome.error"
NOAA = "noaa_lcp_pistonboard_user_manual.pdf"


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    if not is_current(DEST):
        pytest.fail(f"pdf.js {VERSION} is not vendored in {DEST}: run `make vendor`")
    # Quick answers (evidence quoted from the manuals): what a technician sees in any language, no model
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("page-languages"),
                        config='[answer]\nmode = "extractive"\n[server]\nrate_limit_per_minute = 600\n',
                        profile=SCRIPTED_PROFILE.format(script="unused [1].", delay=0.0))
    srv.start()
    yield srv
    srv.stop()


def new_page(browser: Any, **options: Any) -> Any:
    context = browser.new_context(**{**DESK, **options})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    return pg


def html_lang(pg: Any) -> str:
    return str(pg.evaluate("document.documentElement.lang"))


def switch(pg: Any, lang: str) -> None:
    """Choose `lang` in the page's switch and wait for the page to come back in it."""
    pg.select_option("#lang", lang)
    pg.wait_for_function(f"document.documentElement.dataset.lang === {lang!r}")
    pg.wait_for_load_state()


def manual(server: GatewayServer, name: str) -> dict[str, Any]:
    return next(m for m in httpx.get(server.url + "/api/v1/manuals").json()["manuals"] if m["file_name"] == name)


def test_a_browser_asking_for_chinese_gets_the_technician_page_in_chinese(browser: Any,
                                                                        server: GatewayServer) -> None:
    pg = new_page(browser, **CHINESE)
    try:
        pg.goto(server.url + "/")
        assert html_lang(pg) == "zh-CN" and pg.title() == "manualqa — 查询设备手册"
        assert pg.inner_text("#ask") == "提问" and pg.inner_text("label[for=question]") == "您的问题"
        assert pg.get_attribute("#question", "placeholder") == "例如：如何刷写固件？"
        assert pg.inner_text("#manual option[value='']") == "全部手册"
        assert pg.inner_text("#key-box summary") == "访问密钥"
        assert pg.inner_text("header nav a[href='/admin']") == "管理"
        assert pg.input_value("#lang") == "zh" and pg.get_attribute("#lang", "aria-label") == "语言"
        # the scripts speak it too: the mode the gateway answers in, said once the health check is back
        pg.wait_for_function("document.querySelector('#mode option[value=\"\"]').textContent.includes('（')")
        assert pg.inner_text("#mode option[value='']") == "网关默认（快速：仅摘录原文）"
        body = pg.inner_text("body")
        for english in ("Ask", "Your question", "All manuals", "Recent questions", "Access key"):
            assert english not in body, english
    finally:
        pg.context.close()
    # No Accept-Language, or one the pages are not written in: English, as every other browser test expects.
    for accept, lang, word in ((None, "en", "Ask"), ("fr-FR,fr;q=0.9", "en", "Ask"),
                               ("de-AT,de;q=0.9", "de", "Fragen")):
        r = httpx.get(server.url + "/", headers={"Accept-Language": accept} if accept else {})
        assert r.status_code == 200 and r.headers["content-language"] == lang
        assert f'data-lang="{lang}"' in r.text and f'<button id="ask" type="submit">{word}</button>' in r.text
        assert "Accept-Language" in r.headers["vary"] and "set-cookie" not in r.headers


def test_the_switch_to_german_is_remembered_across_a_reload(browser: Any, server: GatewayServer) -> None:
    pg = new_page(browser, **CHINESE)
    try:
        pg.goto(server.url + "/")
        assert pg.inner_text("#ask") == "提问"
        switch(pg, "de")
        assert html_lang(pg) == "de" and pg.inner_text("#ask") == "Fragen"
        assert pg.inner_text("label[for=question]") == "Ihre Frage"
        assert pg.evaluate("localStorage.getItem('manualqa.lang')") == "de"
        assert {c["name"]: c["value"] for c in pg.context.cookies()}.get("manualqa_lang") == "de"
        pg.reload()
        assert html_lang(pg) == "de" and pg.inner_text("#ask") == "Fragen"  # the browser still asks for Chinese
        assert pg.input_value("#lang") == "de"
        # A cookie lost (cleared by the browser): the page restores the choice it kept in localStorage.
        pg.context.clear_cookies()
        pg.goto(server.url + "/")
        pg.wait_for_function("document.documentElement.dataset.lang === 'de'")
        assert pg.inner_text("#ask") == "Fragen"
        # ?lang= works too, and is remembered for the next page without it
        pg.goto(server.url + "/?lang=en")
        assert html_lang(pg) == "en" and pg.inner_text("#ask") == "Ask"
        pg.goto(server.url + "/")
        assert html_lang(pg) == "en" and pg.evaluate("localStorage.getItem('manualqa.lang')") == "en"
    finally:
        pg.context.close()


def test_the_admin_page_and_the_viewer_follow_the_chosen_language(browser: Any, server: GatewayServer) -> None:
    noaa = manual(server, NOAA)
    viewer = f"/viewer?{urlencode({'manual': noaa['sha256'], 'q': 'linear actuator'})}#page=3"
    pg = new_page(browser, **CHINESE)
    try:
        pg.goto(server.url + "/admin")  # Chinese, as the browser asks
        assert html_lang(pg) == "zh-CN" and pg.inner_text("#login") == "登录" and pg.title() == "manualqa — 管理"
        assert pg.inner_text("label[for=admin-key]") == "管理员密钥"
        pg.goto(server.url + "/")
        switch(pg, "de")  # chosen on the technician page ...
        pg.goto(server.url + "/admin")  # ... the admin page follows
        assert html_lang(pg) == "de" and pg.inner_text("#login") == "Anmelden"
        assert pg.inner_text("label[for=admin-key]") == "Admin-Schlüssel"
        pg.fill("#admin-key", "not-a-key")
        pg.click("#login")
        pg.wait_for_function("document.getElementById('login-msg').textContent.length > 0")
        pg.goto(server.url + viewer)  # and so does the viewer
        shown = rendered(pg)
        assert html_lang(pg) == "de" and shown["state"] == "rendered"
        assert pg.inner_text(".where") == f"Seite 3 von {noaa['page_count']}"
        assert pg.inner_text("#whole") == "Ganzes PDF" and pg.inner_text("#prev") == "‹ Zurück"
        assert pg.inner_text("#marks") in ("Der zitierte Satz ist markiert.",
                                           "Die beste Übereinstimmung mit dem zitierten Satz ist markiert.")
        # The viewer's own switch: back to Chinese, on the same page of the manual
        switch(pg, "zh")
        rendered(pg)
        assert pg.inner_text(".where") == f"第 3 页，共 {noaa['page_count']} 页" and pg.url.endswith("#page=3")
        assert pg.inner_text("#whole") == "完整 PDF"
        pg.goto(server.url + "/admin")
        assert html_lang(pg) == "zh-CN" and pg.inner_text("#login") == "登录"
    finally:
        pg.context.close()


def test_a_chinese_manual_uploaded_on_the_chinese_admin_page_answers_a_chinese_question(
        browser: Any, server: GatewayServer, tmp_path: Path) -> None:
    """The acceptance scenario of issue 47: a Chinese manual uploaded on the admin page answers a Chinese
    question with the right page cited, on the Chinese page."""
    pdf = tmp_path / ZH_NAME
    pdf.write_bytes(multilingual_pdf(_with_furniture(ZH_PAGES, ZH_HEADER, "共 {total} 页 第 {n} 页")))
    admin = new_page(browser, **CHINESE)
    try:
        admin.goto(server.url + "/admin")
        admin.fill("#admin-key", server.admin_key("zh-admin"))
        admin.click("#login")
        admin.wait_for_selector("#admin:not([hidden])")
        assert admin.inner_text("#who") == "已登录：zh-admin（管理员）。"
        admin.set_input_files("#file", str(pdf))
        admin.click("#upload")
        admin.wait_for_function("document.getElementById('upload-msg').textContent === '已导入 1 个文件，共 1 个。'",
                                timeout=240_000)
        line = admin.inner_text("#upload-list li")
        assert line.startswith(f"{ZH_NAME}：完成：索引版本 ") and line.endswith(" 已启用"), line
        admin.wait_for_selector(f"#manuals tbody tr:has-text('{ZH_NAME}')")
        assert "删除" in admin.inner_text(f"#manuals tbody tr:has-text('{ZH_NAME}')")
        shot(admin, "admin-zh.png")
    finally:
        admin.context.close()
    uploaded = manual(server, ZH_NAME)

    context = browser.new_context(**PHONE, **CHINESE)
    try:
        tech = context.new_page()
        tech.set_default_timeout(WAIT_MS)
        tech.goto(server.url + "/")
        tech.fill("#question", ZH_QUESTION)
        tech.click("#ask")
        tech.wait_for_selector(FINAL)
        assert tech.get_attribute("#outcome", "class") in ("badge answered", "badge evidence_only"), \
            tech.inner_text("#result")
        assert tech.inner_text("#outcome") in ("已回答", "仅原文摘录")
        assert tech.inner_text("#meta").startswith("手册原文摘录")
        first = tech.locator("#cards .card").first
        assert uploaded["title"] in first.locator("h3").inner_text()
        assert first.locator(".meta").inner_text().startswith("第 2 页")
        quote = first.locator("blockquote")
        assert quote.get_attribute("lang") == "zh"
        assert "12V至24V" in quote.locator("mark").first.inner_text()  # the cited Chinese sentence, marked
        assert "12V至24V" in tech.inner_text("#answer")
        assert first.locator(".lang-note").count() == 0  # the page's own language: nothing to say
        link = first.locator("a.open-page")
        assert link.inner_text() == "打开第 2 页"
        shot(tech, "technician-zh-phone.png")
        link.click()  # the cited page in the viewer, in Chinese, in the same tab (issue 48 item 5)
        tech.wait_for_url("**/viewer?**")
        view = tech
        shown = rendered(view)
        assert shown["state"] == "rendered" and html_lang(view) == "zh-CN"
        assert view.inner_text(".where") == "第 2 页，共 5 页"
        assert view.inner_text("#marks") in ("已标出引用的句子。", "已标出与引用句子最接近的内容。")
        assert "输入电压" in view.evaluate("document.querySelector('.textLayer').textContent")  # CMaps at work
        assert view.locator(".textLayer .highlight").count() > 0
        shot(view, "viewer-zh-phone.png")
        tech.go_back()  # back to the answer
        tech.wait_for_selector(FINAL)

        # On the English and the German page the evidence stays Chinese, and the card says so.
        for lang, label in (("en", "in Chinese"), ("de", "auf Chinesisch")):
            switch(tech, lang)
            tech.fill("#question", ZH_QUESTION)
            tech.click("#ask")
            tech.wait_for_selector(FINAL)
            card = tech.locator("#cards .card").first
            assert card.locator(".lang-note").inner_text() == label
            assert "12V至24V" in card.locator("blockquote").inner_text()
    finally:
        context.close()
