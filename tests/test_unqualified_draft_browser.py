"""Issue 48, item 2: "Explain" on a profile that has not passed gate 4 never shows green.

A real server (answer.mode = "auto") on the sample index with a site profile whose scripted model
writes a sentence the passages back, never qualified. Before, choosing "Explain" gave a green
"answered"; now the option says what its text will be, the evidence is the answer and the model's
text is folded below it as an unchecked draft."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import WAIT_MS
from tests.support.server import GatewayServer
from tests.test_answers_gate import QUESTIONS, RIGHT, site_profile
from tests.test_browser import shot

pytestmark = pytest.mark.timeout(600)
QUESTION = QUESTIONS[0]["question"]


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    work = tmp_path_factory.mktemp("unqualified")
    profile = site_profile(work, RIGHT, name="site.toml")
    srv = GatewayServer(sample_data_dir, work / "srv", config=f'[runtime]\nprofile = "{profile}"\n'
                        '[answer]\nmode = "auto"\n[server]\nrate_limit_per_minute = 600\n')
    srv.start()
    yield srv
    srv.stop()


def test_explain_on_an_unqualified_profile_shows_the_evidence_and_a_labelled_draft_never_green(
        browser: Any, server: GatewayServer) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    try:
        pg.goto(server.url + "/")
        pg.select_option("#mode", "generate")  # "Explain"
        pg.fill("#question", QUESTION)
        pg.click("#ask")
        pg.wait_for_selector("#outcome.answered, #outcome.evidence_only, #outcome.not_found, #outcome.error")
        assert pg.get_attribute("#outcome", "class") == "badge evidence_only", pg.inner_text("#outcome")
        assert pg.locator("#outcome.answered").count() == 0 and pg.locator(".badge.answered").count() == 0
        green = pg.evaluate("getComputedStyle(document.querySelector('#outcome')).backgroundColor")
        assert green == "rgb(85, 85, 85)"  # the evidence badge's grey, not the answered green
        assert pg.locator("#evidence-note").is_visible()
        assert "answer check (gate 4)" in pg.inner_text("#evidence-why")
        # the evidence leads; the model's text only below it, folded and labelled
        assert pg.locator("#draft-box").is_visible() and not pg.locator("#draft").is_visible()
        assert "Unchecked draft" in pg.inner_text("#draft-box summary")
        box = pg.locator("#answer").bounding_box(), pg.locator("#draft-box").bounding_box()
        assert box[0] is not None and box[1] is not None and box[0]["y"] < box[1]["y"]
        pg.click("#draft-box summary")
        assert "Never plug or unplug any device" in pg.inner_text("#draft")
        # and the choice itself says what its text will be
        assert "unchecked draft" in pg.inner_text("#mode option[value='generate']")
        shot(pg, "technician-unqualified-draft.png", full_page=True)
    finally:
        context.close()
