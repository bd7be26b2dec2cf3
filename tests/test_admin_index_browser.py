"""Index versions kept and moved on the admin page (issue 48, item 9), in Debian's chromium driven by
Playwright against a real gateway, on a desktop and on a 390 px phone: a version's Export link
downloads a signed archive; "Remove old versions (keep N)" names in its confirmation what will go and
removes only that (never the active version or the one a rollback returns to); Import uploads the
downloaded archive and the removed version is back in the list, inactive, the page saying so."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browser import WAIT_MS, wait_for_dialog
from tests.support.http import bearer
from tests.support.server import SCRIPTED_PROFILE, GatewayServer
from tests.test_index_gc_api import three_versions

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    work = tmp_path_factory.mktemp("admin-index-browser")
    srv = GatewayServer(sample_data_dir, work, config="[server]\nallow_anonymous_read = false\n",
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    try:
        srv.ops = srv.admin_key("index-admin")
        # the gateway signs its exports and trusts its own key: an archive it exported imports back here
        srv.cli("signing", "create", "this-gateway")
        srv.cli("signing", "export-public", "this-gateway", "--out", str(work / "this-gateway.pub"))
        srv.cli("signing", "trust", str(work / "this-gateway.pub"))
        srv.v0, srv.v1, srv.v2 = three_versions(srv, srv.ops)
        yield srv
    finally:
        srv.stop()


def listed(srv: GatewayServer) -> dict[str, Any]:
    return httpx.get(srv.url + "/api/v1/index/versions", headers=bearer(srv.ops)).json()


def wait_text(pg: Any, element: str, text: str) -> None:
    pg.wait_for_function("([id, text]) => document.getElementById(id).textContent.includes(text)", arg=[element, text])


def export_remove_import(pg: Any, server: GatewayServer, tmp_path: Path) -> None:
    v0, v1, v2 = server.v0, server.v1, server.v2
    assert listed(server)["active"] == v2 and {v["id"] for v in listed(server)["versions"]} == {v0, v1, v2}
    pg.goto(server.url + "/admin")
    pg.fill("#admin-key", server.ops)
    pg.click("#login")
    pg.wait_for_selector("#admin:not([hidden])")
    row = pg.locator("#versions tbody tr", has_text=v1)
    row.wait_for()

    # Export: the link downloads the signed archive of that version
    link = row.locator("a[data-export]")
    link.scroll_into_view_if_needed()
    assert link.is_visible() and link.inner_text() == "Export"
    with pg.expect_download() as info:
        link.click()
    archive = tmp_path / info.value.suggested_filename
    info.value.save_as(archive)
    assert archive.name == f"{v1}.tar" and archive.stat().st_size > 0
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "MANIFEST.json" in names and any(n.startswith(f"payload/indexes/{v1}/") for n in names)

    # Remove old versions (keep 1): the newest (v2, active) and its parent (v0, a rollback's target) stay
    pg.fill("#gc-keep", "1")
    assert pg.inner_text("#gc") == "Remove old versions (keep 1)"
    dialogs: list[str] = []
    pg.once("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.click("#gc")
    wait_for_dialog(pg, dialogs)
    pg.wait_for_timeout(300)  # time for a removal that wrongly went ahead to show
    gone, kept = dialogs[0].split("This frees")
    assert v1 in gone and v0 not in gone and v2 not in gone, dialogs[0]
    assert v0 in kept and v2 in kept, dialogs[0]
    assert {v["id"] for v in listed(server)["versions"]} == {v0, v1, v2}  # dismissed: nothing removed
    pg.once("dialog", lambda d: (dialogs.append(d.message), d.accept()))
    pg.click("#gc")
    wait_text(pg, "gc-msg", f"Removed 1 old version(s): {v1}")
    assert "freed" in pg.inner_text("#gc-msg")
    pg.locator("#versions tbody tr", has_text=v1).wait_for(state="detached")
    assert {v["id"] for v in listed(server)["versions"]} == {v0, v2} and listed(server)["active"] == v2

    # Import: the downloaded bytes go back in; the version is listed again, not active
    pg.set_input_files("#import-file", str(archive))
    pg.click("#import")
    wait_text(pg, "import-msg", f"Imported version {v1}")
    assert "not active" in pg.inner_text("#import-msg")
    back = pg.locator("#versions tbody tr", has_text=v1)
    back.wait_for()
    assert "imported, not active" in back.inner_text() and "(active)" not in back.inner_text()
    assert back.locator("button[data-act]").count() == 1  # the admin activates it
    state = listed(server)
    assert state["active"] == v2 and {v["id"] for v in state["versions"]} == {v0, v1, v2}
    # the audit trail has both actions under their names
    entries = httpx.get(server.url + "/api/v1/audit?limit=20", headers=bearer(server.ops)).json()["entries"]
    assert {"index.gc", "index.import", "index.export"} <= {e["action"] for e in entries if e["result"] == "ok"}


def test_export_remove_and_import_on_a_desktop(browser: Any, server: GatewayServer, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True, locale="en-US")
    try:
        pg = context.new_page()
        pg.set_default_timeout(WAIT_MS)
        export_remove_import(pg, server, tmp_path)
    finally:
        context.close()


def test_export_remove_and_import_on_a_phone(browser: Any, server: GatewayServer, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  accept_downloads=True, locale="en-US")
    try:
        pg = context.new_page()
        pg.set_default_timeout(WAIT_MS)
        export_remove_import(pg, server, tmp_path)
        for control in ("#gc", "#import", "#gc-keep"):
            box = pg.locator(control).bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (control, box)
        widths = pg.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"the page scrolls sideways on a phone: {widths}"
    finally:
        context.close()
