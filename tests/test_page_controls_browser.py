"""Two controls that did not look or act like what they are (issue 48, items 8c and 8d), in Debian's
chromium against a real server on the sample index.

c. The technician page's "Access key" disclosure read as plain text (its summary, laid out as flex,
   lost the browser's triangle): it is a disclosure control to the accessibility tree, shows an arrow
   that turns and a control's outline, and opens from the keyboard.
d. "Roll back" was enabled on an index version with no parent, and only the API's 409 said why: the
   admin page disables it then, with the reason in its title and beside it, and enables it for a
   version built on another one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS, wait_for_dialog
from tests.support.server import GatewayServer

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]

SUMMARY = "#key-box > summary"


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("page-controls"),
                        config='[answer]\nmode = "extractive"\n')
    srv.start()
    yield srv
    srv.stop()


def _ax_node(cdp: Any, name: str) -> dict[str, Any]:
    """The node named `name` in chromium's own accessibility tree (what a screen reader is given)."""
    nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    named = [n for n in nodes if not n.get("ignored") and (n.get("name") or {}).get("value") == name
             and n["role"]["value"] not in ("StaticText", "InlineTextBox")]
    assert len(named) == 1, [(n.get("role"), n.get("name")) for n in named]
    node: dict[str, Any] = named[0]
    return node


def _expanded(node: dict[str, Any]) -> bool | None:
    return next((p["value"]["value"] for p in node.get("properties", []) if p["name"] == "expanded"), None)


def _before(page: Any) -> str:
    return str(page.evaluate(f"getComputedStyle(document.querySelector('{SUMMARY}'), '::before').content"))


def test_access_key_is_a_disclosure_control_that_opens_from_the_keyboard(browser: Any,
                                                                        server: GatewayServer) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone
    try:
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + "/")
        cdp = page.context.new_cdp_session(page)
        node = _ax_node(cdp, "Access key")
        assert node["role"]["value"] == "DisclosureTriangle" and _expanded(node) is False
        # it looks like a control: an arrow that points the way it opens, an outline, a hand
        assert _before(page).startswith('"▸"')  # (its alternative text is "": a screen reader says no arrow)
        style = page.evaluate("s => { const c = getComputedStyle(document.querySelector(s));"
                              " return [c.borderTopStyle, c.borderTopWidth, c.cursor]; }", SUMMARY)
        assert style[0] == "solid" and style[1] != "0px" and style[2] == "pointer", style
        assert page.locator("#key").is_hidden()

        # the keyboard reaches it after Ask, and Enter opens it
        page.focus("#ask")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement === document.querySelector('#key-box > summary')")
        page.keyboard.press("Enter")
        page.locator("#key").wait_for(state="visible")
        assert _expanded(_ax_node(cdp, "Access key")) is True and _before(page).startswith('"▾"')
        page.keyboard.press("Space")  # and closes it again
        page.locator("#key").wait_for(state="hidden")
    finally:
        page.close()


def _admin(page: Any, server: GatewayServer, key: str) -> None:
    page.goto(server.url + "/admin")
    page.wait_for_selector("#admin:not([hidden]), #login-box:not([hidden])")
    if page.locator("#login-box").is_visible():
        page.fill("#admin-key", key)
        page.click("#login")
    page.wait_for_selector("#versions tbody tr")


def test_roll_back_is_disabled_on_a_version_without_a_parent(browser: Any, server: GatewayServer) -> None:
    key = server.admin_key("controls")
    admin = {"Authorization": f"Bearer {key}"}
    versions = httpx.get(server.url + "/api/v1/index/versions", timeout=30).json()
    first = versions["active"]
    assert next(v for v in versions["versions"] if v["id"] == first)["parent"] is None  # the sample index

    # the API refuses it with a JSON error, as before
    r = httpx.post(server.url + "/api/v1/index/rollback", headers=admin, timeout=30)
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"
    assert "no parent" in r.json()["error"]["message"]

    page = browser.new_page()
    try:
        page.set_default_timeout(WAIT_MS)
        _admin(page, server, key)
        button = page.locator("#rollback")
        page.wait_for_function("document.getElementById('rollback').disabled")
        assert "nothing to roll back" in str(button.get_attribute("title"))
        assert first in page.inner_text("#rollback-why")

        # a version built on it (a manual removed): Roll back is enabled and says what it re-activates
        sha = next(m["sha256"] for m in httpx.get(server.url + "/api/v1/manuals", timeout=30).json()["manuals"]
                   if m["file_name"] == "voron0_setup_guide.pdf")
        assert httpx.delete(server.url + f"/api/v1/manuals/{sha}", headers=admin, timeout=300).status_code == 200
        _admin(page, server, key)
        page.wait_for_function("!document.getElementById('rollback').disabled")
        assert first in str(button.get_attribute("title")) and page.inner_text("#rollback-why") == ""

        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.accept()))
        button.click()
        wait_for_dialog(page, dialogs)
        page.wait_for_function("document.getElementById('index-msg').textContent.startsWith('Rolled back')")
        page.wait_for_function("document.getElementById('rollback').disabled")  # back on the first version
        assert httpx.get(server.url + "/api/v1/index/versions", timeout=30).json()["active"] == first
    finally:
        page.close()
