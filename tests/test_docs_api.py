"""Every example in docs/api.md works as written: each ```bash block runs, in document order, with
bash against a real gateway (scripted runtime, reading requires a key), and the ```python block
(the openai SDK) runs too.

A block runs under `set -euo pipefail` with MQA, KEY and the ids the doc names (ANSWER_ID,
MANUAL_ID, JOB_ID, VERSION, NEW_VERSION) in its environment. `curl` is wrapped to add
`--fail-with-body --show-error`, so any 4xx/5xx fails the block; a block documented as an error
carries a `# expect: NNN` comment and must print that HTTP status (its curl uses -i) instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import REPO_ROOT, SCRIPTED_PROFILE, GatewayServer

DOC = REPO_ROOT / "docs" / "api.md"
SCRIPT = "Run BED_SCREWS_ADJUST and adjust each bed screw with the paper test [1]."
UPLOAD_NAME = "pump-p200-service.pdf"
CURL_WRAPPER = 'curl() { command curl --fail-with-body --show-error "$@"; }\n'
EXPECT_RE = re.compile(r"^#\s*expect:\s*(\d{3})\s*$", re.MULTILINE)


@dataclass
class Block:
    lang: str
    line: int
    code: str

    @property
    def expect(self) -> int | None:
        m = EXPECT_RE.search(self.code)
        return int(m.group(1)) if m else None

    @property
    def label(self) -> str:
        first = next((ln for ln in self.code.splitlines() if ln.strip() and not ln.startswith("#")), "")
        return f"L{self.line}:" + re.sub(r"[^A-Za-z0-9/_.$-]+", "_", first)[:60]


def doc_blocks(lang: str) -> list[Block]:
    blocks, current, start, fence = [], [], 0, None
    for no, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), 1):
        if fence is None and line.startswith("```"):
            fence, start, current = line[3:].strip(), no, []
        elif fence is not None and line.startswith("```"):
            if fence == lang:
                blocks.append(Block(lang, start, "\n".join(current) + "\n"))
            fence = None
        elif fence is not None:
            current.append(line)
    return blocks


BASH_BLOCKS = doc_blocks("bash")


def make_upload(target: Path) -> Path:
    """A small real PDF that is not yet indexed: four pages of a sample with a new title (in its
    metadata and stamped on page 1: ingest takes a metadata title its front pages lack for a stale one)."""
    from io import BytesIO

    from pypdf import PdfReader, PdfWriter

    from tests.support.pdfs import text_page

    reader = PdfReader(REPO_ROOT / "sample_manuals" / "voron0_setup_guide.pdf")
    writer = PdfWriter()
    for page in reader.pages[:4]:
        writer.add_page(page)
    writer.pages[0].merge_page(PdfReader(BytesIO(text_page(["Pump P-200 Service Manual"], size=10))).pages[0])
    writer.add_metadata({"/Title": "Pump P-200 Service Manual"})
    with target.open("wb") as fh:
        writer.write(fh)
    return target


def wait_job(url: str, key: str, job_id: str, timeout_s: float = 240.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/api/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {key}"}).json()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} not finished in {timeout_s} s")


@pytest.fixture(scope="module")
def docs_env(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("docs-api")
    server = GatewayServer(sample_data_dir, work, config="[server]\nallow_anonymous_read = false\n",
                           profile=SCRIPTED_PROFILE.format(script=SCRIPT, delay=0.0))
    server.start()
    try:
        key = server.admin_key("integrator")
        # the index export/import examples: a signing key, trusted by this same gateway
        server.cli("signing", "create", "docs-gateway")
        server.cli("signing", "export-public", "docs-gateway", "--out", str(work / "docs-gateway.pub"))
        server.cli("signing", "trust", str(work / "docs-gateway.pub"))
        cwd = work / "cwd"
        cwd.mkdir()
        auth = {"Authorization": f"Bearer {key}"}
        pdf = make_upload(cwd / UPLOAD_NAME)
        with pdf.open("rb") as fh:
            up = httpx.post(f"{server.url}/api/v1/manuals", headers=auth,
                            files={"data": (UPLOAD_NAME, fh, "application/pdf")}, timeout=120)
        assert up.status_code == 202, up.text
        job = wait_job(server.url, key, up.json()["job"])
        assert job["state"] == "done" and job["result"]["version"], job
        ask = httpx.post(f"{server.url}/api/v1/ask", headers=auth, timeout=120,
                         json={"question": "How do I level the bed on the Voron 0?"})
        assert ask.status_code == 200, ask.text
        env = {**os.environ, "MQA": server.url, "KEY": key, "ANSWER_ID": ask.json()["id"],
               "MANUAL_ID": up.json()["sha256"], "JOB_ID": up.json()["job"],
               "VERSION": job["result"]["parent"], "NEW_VERSION": job["result"]["version"]}
        yield {"server": server, "env": env, "cwd": cwd, "key": key}
    finally:
        server.stop()


def test_doc_has_examples() -> None:
    assert len(BASH_BLOCKS) >= 25, f"only {len(BASH_BLOCKS)} bash examples in {DOC}"
    assert all("curl" in b.code for b in BASH_BLOCKS), [b.label for b in BASH_BLOCKS if "curl" not in b.code]
    assert {b.expect for b in BASH_BLOCKS if b.expect} >= {400, 401, 404}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("block", BASH_BLOCKS, ids=[b.label for b in BASH_BLOCKS])
def test_bash_example(block: Block, docs_env: dict[str, Any]) -> None:
    script = "set -euo pipefail\n" + ("" if block.expect else CURL_WRAPPER) + block.code
    proc = subprocess.run(["bash", "-c", script], cwd=docs_env["cwd"], env=docs_env["env"],
                          capture_output=True, text=True, timeout=180)
    where = f"docs/api.md line {block.line}:\n{block.code}\nstdout: {proc.stdout[-2000:]}\n" \
            f"stderr: {proc.stderr[-2000:]}"
    assert proc.returncode == 0, where
    if block.expect:
        statuses = re.findall(r"^HTTP/[\d.]+ (\d{3})", proc.stdout, re.MULTILINE)
        assert statuses and int(statuses[-1]) == block.expect, where
        body = re.split(r"\r?\n\r?\n", proc.stdout, maxsplit=1)[-1]
        err = json.loads(body)["error"]
        assert err["code"] and err["message"], where
    else:
        assert proc.stdout.strip(), f"example printed nothing; {where}"
    # A client polls an upload's job before going on: so does the harness.
    for job_id in re.findall(r'"job":\s*"([0-9A-Z]+)"', proc.stdout):
        assert wait_job(docs_env["env"]["MQA"], docs_env["key"], job_id)["state"] == "done"


def test_python_sdk_example(docs_env: dict[str, Any]) -> None:
    (block,) = doc_blocks("python")
    proc = subprocess.run([sys.executable, "-c", block.code], cwd=docs_env["cwd"], env=docs_env["env"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "['manualqa']" in out
    assert SCRIPT in out and "Sources:" in out, out
    assert re.search(r"^1 .+ page \d+ http://127\.0\.0\.1:\d+/api/v1/manuals/[0-9a-f]{64}/file#page=\d+$",
                     out, re.MULTILINE), out


def test_every_route_is_documented(docs_env: dict[str, Any]) -> None:
    """Each operation in the served OpenAPI schema has a `### \\`METHOD /path\\`` section in the doc."""
    schema = httpx.get(docs_env["env"]["MQA"] + "/api/v1/schema/openapi.json").json()
    headings = [ln for ln in DOC.read_text(encoding="utf-8").splitlines() if ln.startswith("### `")]
    missing = []
    for path, ops in schema["paths"].items():
        pattern = re.escape(path)
        pattern = re.sub(r"\\\{[^}]*\\\}", r"\\{[^}]+\\}", pattern)
        for method in ops:
            rx = re.compile(rf"^### `{method.upper()} {pattern}[`?]")
            if not any(rx.search(h) for h in headings):
                missing.append(f"{method.upper()} {path}")
    assert not missing, f"routes without a section in docs/api.md: {missing}"
    assert len(schema["paths"]) >= 18
