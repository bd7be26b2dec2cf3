"""Offline: the server serves normally inside a network namespace that has only loopback
(`unshare -n`), with the real default model, and nothing it serves points at another host.

The namespace has its own loopback, so the client checks run inside it too: a small script
(written below) starts the server, asks, fetches the pages and reports back as JSON.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import REPO_ROOT

pytestmark = pytest.mark.slow

UI_DIR = REPO_ROOT / "ui"
LOCAL_URL = re.compile(r"^https?://(localhost|127\.0\.0\.1|\[::1\])([:/]|$)")
# XML namespace names are identifiers, never fetched (e.g. inline SVG's xmlns)
NAMESPACE_URLS = ("http://www.w3.org/",)
URL_RE = re.compile(r"https?://[^\s\"'<>)\]}]+")

INSIDE = r'''
import json, re, sys, time
from pathlib import Path
import httpx
from tests.support.server import GatewayServer

data, work = Path(sys.argv[1]), Path(sys.argv[2])
# The real default profile and model; no offline switches: whatever the server needs is local.
srv = GatewayServer(data, work, config="[answer]\nmax_answer_tokens = 24\n",
                    env={"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": ""})
out = {"pages": {}}
srv.start(timeout_s=300)
try:
    c = httpx.Client(base_url=srv.url, timeout=300)
    out["health"] = c.get("/api/v1/health").json()
    t0 = time.perf_counter()
    r = c.post("/api/v1/ask", json={"question": "What input voltage range does the piston board accept?"})
    out["ask"] = {"status": r.status_code, "took_s": round(time.perf_counter() - t0, 2), **r.json()}
    out["deployment"] = c.get("/api/v1/deployment").json()
    queue = ["/", "/admin", "/static/app.js", "/static/admin.js", "/static/style.css",
             "/api/v1/schema", "/api/v1/schema/", "/api/v1/schema/openapi.json"]
    seen = set()
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        r = c.get(path, follow_redirects=True)
        out["pages"][path] = {"status": r.status_code, "type": r.headers.get("content-type", ""),
                              "text": r.text}
        if "html" in r.headers.get("content-type", ""):  # follow what the page loads
            queue += [u for u in re.findall(r'(?:src|href)="([^"#?]+)', r.text) if u.startswith("/")]
finally:
    srv.stop()
    out["server_log"] = srv.log_path.read_text(errors="replace")[-4000:]
print("RESULT " + json.dumps(out))
'''


def external_urls(text: str) -> list[str]:
    return [u for u in URL_RE.findall(text)
            if not LOCAL_URL.match(u) and not u.startswith(NAMESPACE_URLS)]


@pytest.fixture(scope="module")
def offline_run(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("unshare and ip (util-linux, iproute2) are needed for the offline test")
    work = tmp_path_factory.mktemp("web-offline")
    script = work / "inside.py"
    script.write_text(INSIDE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    inner = f"ip link set lo up && exec {sys.executable} {script} {sample_data_dir} {work / 'srv'}"
    (work / "srv").mkdir()
    proc = subprocess.run(["unshare", "-n", "sh", "-c", inner], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def test_namespace_really_has_no_network() -> None:
    """The premise: inside `unshare -n` only loopback exists and other hosts are unreachable."""
    probe = ("import socket\ns = socket.socket(); s.settimeout(3)\n"
             "try:\n    s.connect(('1.1.1.1', 80)); print('CONNECTED')\n"
             "except OSError as e:\n    print('UNREACHABLE', e.errno)\n")
    out = subprocess.run(["unshare", "-n", sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("UNREACHABLE"), out.stdout + out.stderr
    links = subprocess.run(["unshare", "-n", "ip", "-o", "link"], capture_output=True, text=True).stdout
    assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"]


def test_serves_and_answers_with_no_network(offline_run: dict) -> None:
    assert offline_run["health"]["status"] == "ok"
    assert "warning" not in offline_run["health"], offline_run["health"]
    ask = offline_run["ask"]
    assert ask["status"] == 200, ask
    assert ask["outcome"] in ("answered", "evidence_only"), ask  # the real model ran; the check decided
    assert ask["mode"] == "generate", f"the model did not answer: {ask.get('error')}"
    assert ask["chain_id"] and ask["answer"]
    assert ask["timings"].get("output_tokens", 0) > 0
    dep = offline_run["deployment"]
    assert dep["load_error"] is None and dep["chain"]["backend"] == "llamacpp", dep


def test_every_page_and_asset_is_served_locally(offline_run: dict) -> None:
    pages = offline_run["pages"]
    for path in ("/", "/admin", "/static/app.js", "/static/style.css", "/api/v1/schema",
                 "/api/v1/schema/openapi.json"):
        assert pages[path]["status"] == 200, (path, pages[path]["status"])
    assert len(pages) > 8, sorted(pages)  # the pages' own links were followed too
    bad = {p: v["status"] for p, v in pages.items() if v["status"] != 200}
    assert not bad, bad
    assert "openapi" in pages["/api/v1/schema"]["text"].lower()
    json.loads(pages["/api/v1/schema/openapi.json"]["text"])


def test_nothing_served_points_at_another_host(offline_run: dict) -> None:
    found = {p: external_urls(v["text"]) for p, v in offline_run["pages"].items()}
    assert not any(found.values()), {p: u for p, u in found.items() if u}


def test_ui_files_reference_no_external_url() -> None:
    files = [p for p in UI_DIR.rglob("*") if p.suffix in {".html", ".js", ".css", ".svg"}]
    assert len(files) >= 5, files
    found = {str(p.relative_to(REPO_ROOT)): external_urls(p.read_text(encoding="utf-8", errors="replace"))
             for p in files}
    assert not any(found.values()), {p: u for p, u in found.items() if u}


def test_url_scan_catches_external_references() -> None:
    """The scanner itself: a CDN link is caught, local and namespace URLs are not."""
    assert external_urls('<script src="https://cdn.example.com/x.js"></script>') == [
        "https://cdn.example.com/x.js"]
    assert external_urls("fetch('http://10.0.0.5:8080/api')") == ["http://10.0.0.5:8080/api"]
    assert external_urls('<a href="http://localhost:8080/">x</a> <svg xmlns="http://www.w3.org/2000/svg">') == []
