"""An index export the gateway refuses, on the admin page (issue 48, item 9): with no signing key the Export
link once saved the API's 400 JSON body as the "archive". Now the page says why in words and saves nothing;
once a key exists the same link saves the signed archive, from memory or, too large for that, through the
browser's downloads. Debian's chromium against a real gateway, tapped on a 390 px phone, clicked on a desktop."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import bearer
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("admin-export-refused"),
                        config="[server]\nallow_anonymous_read = false\n",
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.ops = srv.admin_key("export-admin")
    yield srv
    srv.stop()


def open_admin(browser: Any, server: GatewayServer, phone: bool,
               in_memory_max: int | None = None) -> tuple[Any, Any, list[Any]]:
    viewport = {"width": 390, "height": 844} if phone else {"width": 1366, "height": 900}
    context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone, locale="en-US",
                                  accept_downloads=True)
    if in_memory_max is not None:
        context.add_init_script(f"window.manualqaExportInMemoryMax = {in_memory_max};")
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    downloads: list[Any] = []
    pg.on("download", lambda d: downloads.append(d))
    pg.goto(server.url + "/admin")
    pg.fill("#admin-key", server.ops)
    pg.click("#login")
    pg.wait_for_selector("#admin:not([hidden])")
    return context, pg, downloads


def wait_text(pg: Any, element: str, text: str) -> None:
    pg.wait_for_function("([id, text]) => document.getElementById(id).textContent.includes(text)", arg=[element, text])


def test_an_export_without_a_signing_key_says_why_and_saves_nothing(browser: Any, server: GatewayServer,
                                                                     tmp_path: Path) -> None:
    version = httpx.get(server.url + "/api/v1/index/versions", headers=bearer(server.ops), timeout=30).json()["active"]
    refused = httpx.get(f"{server.url}/api/v1/index/versions/{version}/export", headers=bearer(server.ops), timeout=60)
    assert refused.status_code == 400 and "no signing key" in refused.json()["error"]["message"]

    context, pg, downloads = open_admin(browser, server, phone=True)
    try:
        link = pg.locator("#versions tbody tr", has_text=version).locator("a[data-export]")
        link.scroll_into_view_if_needed()
        link.tap()
        wait_text(pg, "export-msg", "was not exported")
        said = pg.inner_text("#export-msg")
        assert said.startswith(f"Version {version} was not exported: no signing key on this gateway"), said
        assert "manualqa signing create" in said  # what to do about it
        assert pg.locator("#export-msg").is_visible()
        assert "error-msg" in (pg.get_attribute("#export-msg", "class") or "")
        assert pg.get_attribute("a[data-export]", "aria-busy") is None  # ready for another try
        pg.wait_for_function("document.getElementById('audit').textContent.includes('index.export')")
        assert downloads == [], [d.suggested_filename for d in downloads]  # no JSON saved as an archive
    finally:
        context.close()

    server.cli("signing", "create", "this-gateway")
    context, pg, downloads = open_admin(browser, server, phone=False)
    try:
        link = pg.locator("#versions tbody tr", has_text=version).locator("a[data-export]")
        with pg.expect_download() as info:
            link.click()
        archive = tmp_path / info.value.suggested_filename
        info.value.save_as(archive)
        assert archive.name == f"{version}.tar"
        with tarfile.open(archive) as tar:
            assert "MANIFEST.json" in tar.getnames()
        wait_text(pg, "export-msg", f"Saved {version}.tar")
        assert "error-msg" not in (pg.get_attribute("#export-msg", "class") or "") and len(downloads) == 1
    finally:
        context.close()


    # an archive too large to hold in a phone's memory: once the gateway has said yes, the link itself is
    # followed and the browser's downloads stream it (the limit lowered to 1 byte for the test)
    context, pg, downloads = open_admin(browser, server, phone=True, in_memory_max=1)
    try:
        link = pg.locator("#versions tbody tr", has_text=version).locator("a[data-export]")
        link.scroll_into_view_if_needed()
        with pg.expect_download() as info:
            link.tap()
        streamed = tmp_path / "streamed.tar"
        info.value.save_as(streamed)
        assert info.value.suggested_filename == f"{version}.tar" and info.value.url == link.evaluate("a => a.href")
        with tarfile.open(streamed) as tar:
            assert "MANIFEST.json" in tar.getnames()
        wait_text(pg, "export-msg", "goes to the browser's downloads")
        assert len(downloads) == 1
    finally:
        context.close()
