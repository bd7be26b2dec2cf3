"""schemathesis against the served OpenAPI schema: no 5xx, no response that violates the schema.

Every JSON answer of /api/v1 is a typed object in the schema (gateway.web.responses), and the
Structs that mirror a library dict keep its keys in its order (the wire format is theirs).

A real server (scripted runtime), an admin key, real ids supplied as parameters so that the
operations get past 404s, and a bounded number of examples per operation. DELETE
/api/v1/manuals/{manual_id} is left out: with a real id it removes a sample manual in the middle
of the run (every later operation on it turns into a 404); its behaviour is tested in
tests/test_web_api.py. POST /api/v1/keys/{name}/revoke is left out too (NOT_FUZZED): it could revoke
the key the run authenticates with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import httpx
import msgspec
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
    ("post", "/v1/chat/completions"), ("get", "/v1/models"), ("get", "/v1/models/{model_id}"),
}

# Operations the run leaves out besides DELETE, and why (the count of tested operations allows for them).
NOT_FUZZED = {
    ("post", "/api/v1/keys/{name}/revoke"): "the stateful phase feeds it the names GET /api/v1/keys lists, "
    "and revoking the run's own admin key turns every later operation into a 401 (tests/test_admin_api.py)",
}

# /api/v1 operations whose success response is deliberately not JSON, and why. (POST /api/v1/ask
# also answers text/event-stream with stream: true, but its JSON answer is typed, so it is checked.)
NOT_JSON = {
    ("get", "/api/v1/metrics"): "Prometheus text exposition (text/plain), for scrapers",
    ("get", "/api/v1/manuals/{manual_id}/file"): "the original PDF (application/pdf)",
    ("get", "/api/v1/index/versions/{version}/export"): "the signed index archive (tar or tar.gz)",
    ("get", "/api/v1/answers/export"): "the answer log as a file (JSON lines or CSV), as `manualqa log export`",
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


def resolved(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else node


def test_every_api_v1_json_response_is_an_object_with_named_properties(server: GatewayServer) -> None:
    schema = httpx.get(server.url + "/api/v1/schema/openapi.json").json()
    seen = set()
    for path, item in schema["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        for method, op in item.items():
            seen.add((method, path))
            successes = {code: r for code, r in op["responses"].items() if code.startswith("2")}
            assert successes, (method, path, "documents no success response")
            for code, response in successes.items():
                content = response.get("content") or {}
                if (method, path) in NOT_JSON:
                    assert "application/json" not in content, (method, path, code, "is JSON after all")
                    continue
                assert "application/json" in content, (method, path, code, sorted(content))
                body = resolved(schema, content["application/json"]["schema"])
                assert body.get("type") == "object" and body.get("properties"), (method, path, code, body)
    assert set(NOT_JSON) <= seen, set(NOT_JSON) - seen  # the exclusions name real operations


def struct_fields(cls: type[msgspec.Struct]) -> list[str]:
    return list(cls.__struct_fields__)


def test_response_structs_mirror_the_library_dicts_key_for_key_in_order(tmp_path: Path) -> None:
    from gateway.answer.citations import Citation
    from gateway.answer.pipeline import AnswerResult
    from gateway.records.answers import AnswerLog
    from gateway.records.jobs import JobRunner
    from gateway.web.responses import AnswerDetail, AnswerOut, AnswerRow, CitationOut
    from gateway.web.responses_admin import IngestReportOut, Job
    from retrieval.builder import IngestReport

    assert struct_fields(AnswerOut) == [f.name for f in fields(AnswerResult)]
    assert struct_fields(CitationOut) == [f.name for f in fields(Citation)]
    assert struct_fields(IngestReportOut) == list(IngestReport().to_dict())
    log = AnswerLog(tmp_path / "gateway.db")
    try:
        answer_id = log.record(AnswerResult(id="01TESTANSWER", time="2026-01-01T00:00:00.000Z", question="q?",
                                            scope=[], client="api"), durable=True)
        log.add_feedback(answer_id, 1, "ok")
        assert struct_fields(AnswerRow) == list(log.query()[0])
        assert struct_fields(AnswerDetail) == [*log.get(answer_id), "chain"]
    finally:
        log.close()
    jobs = JobRunner(tmp_path / "gateway.db")
    try:
        assert struct_fields(Job) == list(jobs.get(jobs.submit("test", lambda progress: {})) or {})
    finally:
        jobs.close()


def test_schemathesis_finds_no_server_error_and_no_schema_violation(server: GatewayServer,
                                                                    tmp_path: Path) -> None:
    h = {"Authorization": f"Bearer {server.admin}"}
    answer = httpx.post(server.url + "/api/v1/ask", headers=h, timeout=60,
                        json={"question": "What input voltage range does the piston board accept?"}).json()
    manual = httpx.get(server.url + "/api/v1/manuals", headers=h).json()["manuals"][0]["id"]
    version = httpx.get(server.url + "/api/v1/index/versions", headers=h).json()["active"]
    config = tmp_path / "schemathesis.toml"
    config.write_text(f'[parameters]\nanswer_id = "{answer["id"]}"\nmanual_id = "{manual}"\n'
                      f'from = "{version}"\nto = "{version}"\nversion = "{version}"\nmodel_id = "manualqa"\n',
                      encoding="utf-8")
    cmd = [schemathesis_cli(), "--config-file", str(config), "--no-color", "run",
           server.url + "/api/v1/schema/openapi.json",
           "-H", f"Authorization: Bearer {server.admin}",
           "--checks", "not_a_server_error,response_schema_conformance",
           "--phases", "examples,coverage,fuzzing,stateful",
           "--max-examples", str(MAX_EXAMPLES), "--workers", "1", "--request-timeout", "60",
           "--exclude-method", "DELETE", *[arg for _, path in NOT_FUZZED for arg in ("--exclude-path", path)]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=420, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    print(out[-2500:])
    assert proc.returncode == 0, out[-8000:]
    schema = httpx.get(server.url + "/api/v1/schema/openapi.json").json()
    operations = sum(1 for path, item in schema["paths"].items() for method in item
                     if method != "delete" and (method, path) not in NOT_FUZZED)
    assert operations >= 22 and f"Tested: {operations}" in out, out[-3000:]  # all but DELETE and NOT_FUZZED
    assert server.alive()
    log = server.log_path.read_text(errors="replace")
    assert "unhandled error" not in log, log[-4000:]
