"""One deployment is one deployment in the replay report, however it was replayed (issue 48, item 8f).

Replayed in-process, a run recorded the profile and the mode but no chain; through `--url` it recorded
the URL and no mode, so `replay compare` showed one deployment as two ("chain -" on one side, "mode -"
on the other). Both now record the same identity (profile, mode, chain, index version) from the
answers themselves, and say where they asked (`via`). A real server on the sample index in extractive
mode, and `manualqa replay` run as a site runs it: in-process on the same data and config, and --url.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.qa.replay import IDENTITY
from tests.support.server import GatewayServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("replay-identity"),
                        config='[answer]\nmode = "extractive"\n[server]\nrate_limit_per_minute = 600\n')
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def qfile(tmp_path_factory: pytest.TempPathFactory, questions: list[dict[str, Any]]) -> Path:
    pick = [q for q in questions if q["id"] in ("voron-01", "lcp-01", "lcp-03")]
    path = tmp_path_factory.mktemp("q") / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in pick), encoding="utf-8")
    return path


def test_in_process_and_url_replays_record_the_same_deployment(server: GatewayServer, qfile: Path,
                                                               tmp_path: Path) -> None:
    local = json.loads(server.cli("replay", str(qfile), "--label", "local", "--json").stdout)
    remote = json.loads(server.cli("replay", str(qfile), "--label", "remote", "--url", server.url, "--json").stdout)
    a, b = local["deployment"], remote["deployment"]
    assert {k: a[k] for k in IDENTITY} == {k: b[k] for k in IDENTITY}, (a, b)
    assert a["mode"] == "extractive" and a["chain_id"] is None and a["profile"] and a["index_version"]
    assert (a["via"], b["via"]) == ("in-process", server.url)

    # the line `replay run` and `replay show` print: the same but for where it asked
    lines = [server.cli("replay", "show", label).stdout.splitlines()[0] for label in ("local", "remote")]
    identities = [re.sub(r" via \S+$", "", line.split("; deployment ", 1)[1]) for line in lines]
    assert identities[0] == identities[1] and "mode=extractive" in identities[0], lines
    printed = server.cli("replay", str(qfile), "--label", "again", "--url", server.url).stdout
    assert identities[0] in printed, printed

    # the report's deployment rows: the identity first, the same cell on both sides
    report = tmp_path / "report.html"
    server.cli("replay", "compare", "local", "remote", "--report", str(report), check=False)  # verdict aside
    html = report.read_text(encoding="utf-8")
    rows = re.findall(r"<tr><th>(\w+)</th><td><code>(.*?)</code></td><td><code>(.*?)</code></td></tr>", html)
    assert [r[0] for r in rows][:len(IDENTITY)] == list(IDENTITY)
    assert all(base == cand for key, base, cand in rows if key in IDENTITY), rows
