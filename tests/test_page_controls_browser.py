"""Controls that did not look or act like what they are (issue 48, item 8c), in Debian's chromium
against a real server on the sample index.

c. The technician page's "Access key" disclosure read as plain text (its summary, laid out as flex,
   lost the browser's triangle): it is a disclosure control to the accessibility tree, shows an arrow
   that turns and a control's outline, and opens from the keyboard.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
        page.set_default_timeout(60_000)
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

