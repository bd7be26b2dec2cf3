"""Every page names its icon, served locally: browsers otherwise ask for /favicon.ico on every page
and log a 404 each time (issue 27, item 7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


@pytest.fixture
def client(tmp_path: Path):
    from litestar.testing import TestClient

    from gateway.config import Settings
    from gateway.web.app import create_app

    with TestClient(create_app(Settings(data_dir=tmp_path / "data"), warm=False)) as c:
        yield c


@pytest.mark.parametrize("page", ["/", "/admin", "/api/v1/schema"])
def test_each_page_links_an_icon_that_is_served(client, page: str) -> None:
    html = client.get(page).text
    icon = re.search(r'<link rel="icon" href="([^"]+)"', html)
    assert icon, f"{page} names no icon"
    r = client.get(icon.group(1))
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml"), r.headers
    assert r.text.lstrip().startswith("<svg")
