"""Debian's chromium driven by Playwright, one way for every browser test (test-only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# How long a browser test waits for the page (an answer, a selector) before it fails: a bound on a hung page,
# never on a slow one (a test that passes waits no longer; 60 s failed once while both cores ran a benchmark)
WAIT_MS = 300_000
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium; a missing one fails the test with how to install it (never a skip)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
                    "(`make browser` installs it with apt-get)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def wait_for_dialog(page: Any, seen: list[str], timeout_s: float = 30) -> None:
    """Until a dialog handler has put its message in `seen` (Playwright runs the handlers while it
    waits); a fixed wait missed the dialog when a busy box was slow to show it."""
    waited = 0.0
    while not seen:
        assert waited < timeout_s, f"no dialog within {timeout_s:g} s"
        page.wait_for_timeout(50)
        waited += 0.05
