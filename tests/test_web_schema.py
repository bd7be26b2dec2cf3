"""schemathesis against the served OpenAPI schema: no 5xx, no response that violates the schema.

A real server (scripted runtime), an admin key, real ids supplied as parameters so that the
operations get past 404s, and a bounded number of examples per operation. DELETE
/api/v1/manuals/{manual_id} is left out: with a real id it removes a sample manual in the middle
of the run (every later operation on it turns into a 404); its behaviour is tested in
tests/test_web_api.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.slow

MAX_EXAMPLES = int(os.environ.get("MANUALQA_SCHEMATHESIS_EXAMPLES", "15"))
ISSUE_OPERATIONS = {
    ("post", "/api/v1/ask"), ("post", "/api/v1/search"), ("get", "/api/v1/manuals"),
    ("post", "/api/v1/manuals"), ("get", "/api/v1/jobs/{job_id}"), ("delete", "/api/v1/manuals/{manual_id}"),
    ("get", "/api/v1/manuals/{manual_id}/file"), ("get", "/api/v1/manuals/{manual_id}/pages/{page}"),
    ("get", "/api/v1/index/versions"), ("post", "/api/v1/index/versions/{version}/activate"),
    ("post", "/api/v1/index/rollback"), ("get", "/api/v1/index/diff"), ("get", "/api/v1/answers"),
    ("get", "/api/v1/answers/{answer_id}"), ("post", "/api/v1/answers/{answer_id}/feedback"),
    ("get", "/api/v1/deployment"), ("get", "/api/v1/health"), ("get", "/api/v1/metrics"),
    ("post", "/v1/chat/completions"), ("get", "/v1/models"),
}


def schemathesis_cli() -> str:
    exe = Path(sys.executable).with_name("schemathesis")
    found = str(exe) if exe.exists() else shutil.which("schemathesis")
    if not found:
        pytest.fail("schemathesis is not installed in this environment (pip install schemathesis)")
    return found


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("web-schema"),
                        config="[server]\nrate_limit_per_minute = 600\n",
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.admin = srv.admin_key()
    yield srv
    srv.stop()


def test_schema_documents_the_api_and_its_error_shape(server: GatewayServer) -> None:
    schema = httpx.get(server.url + "/api/v1/schema/openapi.json").json()
    ops = {(m, p) for p, item in schema["paths"].items() for m in item}
    assert ISSUE_OPERATIONS <= ops, ISSUE_OPERATIONS - ops
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    for path, item in schema["paths"].items():
        for method, op in item.items():
            for status in ("400", "default"):
                ref = op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/Error", (method, path, status)
    ask = schema["paths"]["/api/v1/ask"]["post"]["responses"]["200"]["content"]
    assert {"application/json", "text/event-stream"} <= set(ask)
    docs = httpx.get(server.url + "/api/v1/schema")
    assert docs.status_code == 200 and "text/html" in docs.headers["content-type"]


def test_schemathesis_finds_no_server_error_and_no_schema_violation(server: GatewayServer,
                                                                    tmp_path: Path) -> None:
    h = {"Authorization": f"Bearer {server.admin}"}
    answer = httpx.post(server.url + "/api/v1/ask", headers=h, timeout=60,
                        json={"question": "What input voltage range does the piston board accept?"}).json()
    manual = httpx.get(server.url + "/api/v1/manuals", headers=h).json()["manuals"][0]["id"]
    version = httpx.get(server.url + "/api/v1/index/versions", headers=h).json()["active"]
    config = tmp_path / "schemathesis.toml"
    config.write_text(f'[parameters]\nanswer_id = "{answer["id"]}"\nmanual_id = "{manual}"\n'
                      f'from = "{version}"\nto = "{version}"\nversion = "{version}"\n', encoding="utf-8")
    cmd = [schemathesis_cli(), "--config-file", str(config), "--no-color", "run",
           server.url + "/api/v1/schema/openapi.json",
           "-H", f"Authorization: Bearer {server.admin}",
           "--checks", "not_a_server_error,response_schema_conformance",
           "--phases", "examples,coverage,fuzzing,stateful",
           "--max-examples", str(MAX_EXAMPLES), "--workers", "1", "--request-timeout", "60",
           "--exclude-method", "DELETE"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=420, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    print(out[-2500:])
    assert proc.returncode == 0, out[-8000:]
    assert "Tested: 19" in out, out[-3000:]
    assert server.alive()
    log = server.log_path.read_text(errors="replace")
    assert "unhandled error" not in log, log[-4000:]
