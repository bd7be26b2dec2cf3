"""Contracts that once drifted (issue 24): `manualqa log --client web` refused, two
defaults of rrf_k, error codes and caps that drifted from docs/api.md, a display-title cache that
every logged answer emptied, and a web ask's slot wait booked as overhead instead of queue time."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gateway.cli import main
from gateway.config import Settings
from gateway.records.answer_rows import CLIENTS, LogError
from gateway.records.answers import AnswerLog
from gateway.services import Services
from retrieval.types import SearchParams

ROOT = Path(__file__).resolve().parent.parent
API_MD = ROOT / "docs" / "api.md"


def log_row(i: int, client: str) -> dict[str, Any]:
    return {"id": f"01ISSUE24ROW{i:014d}", "question": f"question {i}?", "scope": [], "outcome": "answered",
            "mode": "extractive", "client": client}


# -- 1. the client kinds: one Literal, the CLI's choices, the log's check ------------------------------

def test_client_kinds_are_the_ones_the_log_holds() -> None:
    """Every client the gateway writes (web page, JSON API, /v1, CLI, replay, bench) is one Client."""
    assert set(CLIENTS) == {"web", "api", "openai", "cli", "replay", "bench"}


def test_log_client_web_is_accepted_and_filters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`manualqa log --client web` was refused (the choices were cli|api|ui|replay)."""
    data = tmp_path / "data"
    log = AnswerLog(Settings(data_dir=data).db_path)
    for i, client in enumerate(CLIENTS):
        log.record(log_row(i, client), durable=True)
    log.close()
    monkeypatch.setenv("MANUALQA_DATA", str(data))
    monkeypatch.delenv("MANUALQA_CONFIG", raising=False)
    for client in CLIENTS:
        result = CliRunner().invoke(main, ["log", "--client", client, "--json"])
        assert result.exit_code == 0, result.output
        assert [r["client"] for r in json.loads(result.output)] == [client]


def test_log_refuses_a_row_with_an_unknown_client(tmp_path: Path) -> None:
    """A client name outside Client would be a row no filter offers: refused like an unknown outcome."""
    log = AnswerLog(tmp_path / "gateway.db")
    with pytest.raises(LogError, match="client"):
        log.record(log_row(1, "ui"))
    log.close()


# -- 2. rrf_k: one default, SearchParams' --------------------------------------------------------------

def test_search_defaults_are_search_params() -> None:
    """search() defaulted to rrf_k=60 while the configured gateway (SearchParams) searches with 10."""
    from retrieval.search import DEFAULTS, search, search_with_timings

    params = SearchParams()
    assert params.rrf_k == 10  # chosen on eval/dev, documented in README's [search] table
    assert DEFAULTS == params
    for fn in (search, search_with_timings):
        defaults = {name: p.default for name, p in inspect.signature(fn).parameters.items()}
        # every setting travels in the one SearchParams, whose default is the configured gateway's
        assert defaults["params"] == params
        assert not {"k", "rrf_k", "candidates", "page_share", "weights", "mode"} & set(defaults)


def test_search_without_options_fuses_with_the_configured_rrf_k(sample_data_dir: Path, embedder: Any) -> None:
    """A caller passing no option (bench, tests, tools) ranks as the gateway does."""
    from retrieval.search import is_navigation, search
    from retrieval.versions import IndexStore

    store = IndexStore(sample_data_dir)
    question = "What input voltage range does the piston board accept?"
    hits = search(store, embedder, question)
    assert hits == search(store, embedder, question, SearchParams())
    for h in hits:
        expected = sum(1 / (10 + r) for r in (h.dense_rank, h.lexical_rank) if r is not None)
        assert h.score == pytest.approx(expected * (0.5 if is_navigation(h.heading, h.text) else 1))
    # SearchParams travels whole: the configured gateway's fields, not a second spelling of them
    other = SearchParams(rrf_k=60, candidates=20)
    assert search(store, embedder, question, other) == search(
        store, embedder, question, dataclasses.replace(SearchParams(), rrf_k=60, candidates=20))
    assert [h.score for h in search(store, embedder, question, other)] != [h.score for h in hits]


# -- 3. the error contract of docs/api.md ---------------------------------------------------------------

def documented_codes() -> set[str]:
    """The `code`s of the status table in docs/api.md's "Errors" section."""
    section = API_MD.read_text(encoding="utf-8").split("## Errors", 1)[1].split("\n## ", 1)[0]
    codes: set[str] = set()
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) > 3 and cells[1].strip().isdigit():
            codes.update(re.findall(r"`([a-z_]+)`", cells[2]))
    return codes


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[Any]:
    from litestar.testing import TestClient

    from gateway.web.app import create_app

    with TestClient(create_app(Settings(data_dir=tmp_path / "data"), warm=False)) as c:
        yield c


def error(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text[:300])
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] in documented_codes(), body
    return body["error"]


JSON_ROUTES = ["/api/v1/ask", "/api/v1/search", "/v1/chat/completions"]
JSON = {"Content-Type": "application/json"}


def test_the_codes_litestar_errors_map_to_are_documented() -> None:
    """Litestar's own 400 was `bad_request`, a code docs/api.md does not list."""
    from gateway.web.errors import _CODES

    assert set(_CODES.values()) <= documented_codes(), set(_CODES.values()) - documented_codes()


@pytest.mark.parametrize("path", JSON_ROUTES)
def test_malformed_json_is_invalid_json(client: Any, path: str) -> None:
    for body in (b"{not json", b'{"question": ', b"\xff\xfe{"):
        assert error(client.post(path, content=body, headers=JSON), 400)["code"] == "invalid_json"


@pytest.mark.parametrize("path", JSON_ROUTES)
def test_an_empty_body_says_so_without_a_key_error(client: Any, path: str) -> None:
    """The details were Litestar's KeyError text: {"message": "'data'"}."""
    for headers in (JSON, {}):
        r = client.post(path, content=b"", headers=headers)
        err = error(r, 400)
        assert err["code"] == "invalid_json" and "empty" in err["message"], err
        assert "'data'" not in r.text


@pytest.mark.parametrize("path", JSON_ROUTES)
def test_text_and_form_bodies_are_415_not_parsed_as_json(client: Any, path: str) -> None:
    body = json.dumps({"question": "How do I bleed the pump?", "query": "bleed the pump",
                       "messages": [{"role": "user", "content": "How do I bleed the pump?"}]}).encode()
    for content_type in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded"):
        r = client.post(path, content=body, headers={"Content-Type": content_type})
        assert error(r, 415)["code"] == "unsupported_media_type"
    r = client.post(path, data={"question": "How do I bleed the pump?"})  # a real form
    assert error(r, 415)["code"] == "unsupported_media_type"
    multipart = client.post(path, files={"question": ("q.txt", b"How do I bleed the pump?", "text/plain")})
    assert error(multipart, 415)["code"] == "unsupported_media_type"


def test_json_bodies_keep_working_with_a_charset_or_no_content_type(client: Any) -> None:
    """The contract for JSON clients is unchanged: a charset parameter, or no Content-Type at all."""
    for headers in ({"Content-Type": "application/json; charset=utf-8"}, {}):
        r = client.post("/api/v1/search", content=b'{"query": "bleed the pump"}', headers=headers)
        assert error(r, 409)["code"] == "retrieval_error"  # parsed: no index yet
        r = client.post("/api/v1/ask", content=b'{"question": "How?", "mode": "extractive"}', headers=headers)
        assert r.status_code == 200 and r.json()["outcome"] == "error", r.text


def test_a_wrong_media_type_without_a_key_is_still_401(client: Any) -> None:
    """The media type is checked after the guards: an admin route says "key required" first."""
    r = client.post("/api/v1/deployment/answer-mode", content=b"mode=extractive",
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert error(r, 401)["code"] == "unauthorized"


def test_a_host_litestar_refuses_is_invalid_host(client: Any) -> None:
    """Litestar's own Host check (before routing) answered `bad_request`; docs/api.md says invalid_host."""
    assert error(client.get("/api/v1/health", headers={"host": "ex ample.org"}), 400)["code"] == "invalid_host"


def test_method_not_allowed_is_documented(client: Any) -> None:
    assert error(client.get("/api/v1/ask"), 405)["code"] == "method_not_allowed"


def chat(client: Any, *messages: tuple[str, str]) -> Any:
    return client.post("/v1/chat/completions", json={
        "model": "manualqa", "messages": [{"role": role, "content": text} for role, text in messages]})


def test_a_chat_question_is_capped_like_a_question(client: Any) -> None:
    """The last user message is the question: over 2,000 characters it is a 400 as on /api/v1/ask,
    not cut to 2,000 and answered (the cap was 20,000 per message, the question silently truncated)."""
    long_question = "How do I bleed the pump? " + "x" * 2000
    err = error(chat(client, ("user", long_question)), 400)
    assert err["code"] == "invalid_request" and "2000" in err["message"], err
    ask = client.post("/api/v1/ask", json={"question": long_question})
    assert error(ask, 400)["code"] == "invalid_request"
    parts = client.post("/v1/chat/completions", json={"model": "manualqa", "messages": [
        {"role": "user", "content": [{"type": "text", "text": long_question}]}]})
    assert error(parts, 400)["code"] == "invalid_request"


def test_earlier_chat_turns_may_be_longer_than_a_question(client: Any) -> None:
    """A system prompt or an earlier turn (up to 20,000 characters, documented) is not the question."""
    r = chat(client, ("system", "You answer from manuals. " * 400), ("user", "Tell me about the pump. " * 400),
             ("assistant", "It is a pump. " * 1000), ("user", "x" * 2000))
    assert r.status_code == 200, r.text[:300]
    assert error(chat(client, ("system", "s" * 20001), ("user", "How?")), 400)["code"] == "invalid_request"


def test_the_docs_state_the_chat_caps_and_the_415() -> None:
    text = API_MD.read_text(encoding="utf-8")
    openai = text.split("## OpenAI-compatible endpoint", 1)[1]
    assert "2,000 characters" in openai and "20,000 characters" in openai
    assert {"invalid_json", "unsupported_media_type", "method_not_allowed", "invalid_host"} <= documented_codes()
    assert "bad_request" not in text


# -- 4. the display-title cache: titles change it, answers do not --------------------------------------

def test_an_answer_logged_keeps_the_title_cache_a_rename_clears_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Keyed on gateway.db's stat (and its WAL), the cache was dropped by every answer logged: every
    search after an answer read the titles again over a new connection."""
    from gateway.records import titles as titles_module
    from gateway.records.titles import DisplayTitles, TitleCache, current_titles

    db = tmp_path / "gateway.db"
    cache = TitleCache()  # a gateway's own (gateway.services.Services.titles)
    log = AnswerLog(db)
    reads = []
    real_all = DisplayTitles.all
    monkeypatch.setattr(DisplayTitles, "all", lambda self: reads.append(1) or real_all(self))
    first = current_titles(db, cache)
    assert first == {} and len(reads) == 1
    for i in range(3):  # answers logged (the WAL written, the file's size and mtime changed)
        log.record(log_row(i, "web"), durable=True)
        assert current_titles(db, cache) is first
    assert len(reads) == 1
    # A rename from another connection in this process shows at once ...
    DisplayTitles(db).set("ab" * 32, "Pump P-100")
    assert current_titles(db, cache) == {"ab" * 32: "Pump P-100"} and len(reads) == 2
    log.record(log_row(9, "api"), durable=True)
    assert current_titles(db, cache) == {"ab" * 32: "Pump P-100"} and len(reads) == 2
    # ... and so does one from another process (`manualqa rename`), twice within one clock tick.
    rename = ("import sys; from gateway.records.titles import DisplayTitles; d = DisplayTitles(sys.argv[1]); "
              "d.set('ab' * 32, 'Pump P-200'); d.set('ab' * 32, sys.argv[2]) if sys.argv[2] else d.clear('ab' * 32)")
    subprocess.run([sys.executable, "-c", rename, str(db), "Pump P-300"], check=True, cwd=ROOT)
    assert current_titles(db, cache) == {"ab" * 32: "Pump P-300"}
    subprocess.run([sys.executable, "-c", rename, str(db), ""], check=True, cwd=ROOT)
    assert current_titles(db, cache) == {}
    log.close()
    assert titles_module.stamp_path(db).exists()


def test_a_replaced_database_is_read_again(tmp_path: Path) -> None:
    """A restore renames another gateway.db into place: its titles show, whatever the stamp says."""
    from gateway.records.titles import DisplayTitles, TitleCache, current_titles, stamp_path

    db, other = tmp_path / "gateway.db", tmp_path / "other.db"
    cache = TitleCache()
    DisplayTitles(db).set("ab" * 32, "Old title")
    DisplayTitles(other).set("ab" * 32, "Restored title")
    assert current_titles(db, cache) == {"ab" * 32: "Old title"}
    stamp_path(other).unlink()  # a backup holds gateway.db, not the stamp
    other.rename(db)
    assert current_titles(db, cache) == {"ab" * 32: "Restored title"}


# -- 5. queue time: the wait for the generation slot is queue_ms ------------------------------------------

@pytest.fixture()
def gw(sample_data_dir: Path, tmp_path: Path, embedder: Any) -> Iterator[Services]:
    from tests.support.scripted import ScriptedRuntime

    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data, ignore=shutil.ignore_patterns("gateway.db*"))
    g = Services(Settings(data_dir=data), embedder=embedder)
    g.settings.answer.mode = "generate"
    runtime = ScriptedRuntime("scripted.bin", {"script": "The piston board accepts 6 V to 36 V input [1]."})
    runtime.load()
    g.runtime = runtime
    yield g
    g.log.close()


def test_the_wait_for_the_generation_slot_is_queue_time(gw: Services) -> None:
    """queue_ms (the slot's wait) was overwritten by the generation lock's wait (about 0)."""
    from gateway.answer.pipeline import answer_events
    from gateway.answer.request import AnswerRequest

    @contextmanager
    def slow_slot(cancel: threading.Event) -> Iterator[bool]:
        time.sleep(0.3)  # another answer holds the model
        yield True

    question = "What input voltage range does the piston board accept?"
    events = list(answer_events(gw.answer_deps(), AnswerRequest(question=question, client="web"), slot=slow_slot))
    result = events[-1].result
    assert result.mode == "generate" and result.timings["queue_ms"] >= 300, result.timings
    assert gw.log.get(result.id)["timings"]["queue_ms"] >= 300
