"""The one error protocol (gateway.errors): every user-facing error carries its HTTP status and
code; the web and the CLI each map it in one place, and anything else stays a bug (500)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gateway.answer.pipeline import AnswerInputError
from gateway.cli import main
from gateway.config import ConfigError
from gateway.errors import GatewayError, is_user_error
from gateway.qa.bench import BenchError
from gateway.qa.compare import GateError
from gateway.qa.replay import ReplayError
from gateway.records.answer_rows import LogError
from gateway.records.keys import KeyStoreError
from ingest.models import IngestError
from retrieval.types import NoIndexError, RetrievalError
from runtimes.profiles import ProfileError

USER_ERRORS = [AnswerInputError, ConfigError, BenchError, GateError, ReplayError, LogError, KeyStoreError,
               IngestError, RetrievalError, NoIndexError, ProfileError]


@pytest.mark.parametrize("cls", USER_ERRORS)
def test_every_user_error_carries_status_and_code(cls: type[Exception]) -> None:
    exc = cls("what went wrong")
    assert is_user_error(exc)
    assert 400 <= cls.http_status < 600 and cls.code


def test_bugs_are_not_user_errors() -> None:
    assert not is_user_error(KeyError("x")) and not is_user_error(RecursionError())
    assert not is_user_error(ValueError("a plain ValueError is not a message for the user"))
    assert issubclass(LogError, GatewayError) and NoIndexError.http_status == 409 != RetrievalError.http_status


def _app_client(tmp_path: Path):
    from litestar.testing import TestClient

    from gateway.config import Settings
    from gateway.web.app import create_app

    return TestClient(create_app(Settings(data_dir=tmp_path / "data"), warm=False))


def test_web_maps_the_protocol_once(tmp_path: Path) -> None:
    with _app_client(tmp_path) as client:
        r = client.post("/api/v1/ask", json={"question": "How do I bleed the pump?", "mode": "extractive"})
        # no index: an answer is still logged (outcome error); a search is a 409 (NoIndexError)
        assert r.status_code == 200 and r.json()["outcome"] == "error"
        r = client.post("/api/v1/search", json={"query": "bleed the pump"})
        assert r.status_code == 409 and r.json()["error"]["code"] == "retrieval_error", r.text
        r = client.get("/api/v1/answers/", params={"since": "99999999999d"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"


def test_cli_maps_the_protocol_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MANUALQA_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("MANUALQA_CONFIG", raising=False)
    result = CliRunner().invoke(main, ["index", "rollback"])
    assert result.exit_code == 1 and result.output.startswith("Error: no index yet"), result.output
    result = CliRunner().invoke(main, ["log", "export", "--since", "99999999999d"])
    assert result.exit_code == 1 and "Error: since" in result.output, result.output
