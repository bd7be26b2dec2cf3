"""Configuration: defaults < manualqa.toml < MANUALQA_* variables, and clear errors naming the key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gateway.config import ConfigError, Settings, load_settings

REPO = Path(__file__).resolve().parent.parent


def test_example_file_states_the_real_defaults() -> None:
    # manualqa.toml.example documents every key with its default: it must not drift from the code.
    from_example = load_settings(REPO / "manualqa.toml.example", env={})
    assert dataclasses.asdict(from_example) == dataclasses.asdict(Settings())


def test_env_overrides_file(tmp_path: Path) -> None:
    cfg = tmp_path / "m.toml"
    cfg.write_text('data_dir = "/srv/mqa"\n[server]\nport = 9000\n[answer]\nmode = "extractive"\n')
    s = load_settings(cfg, env={"MANUALQA_SERVER__PORT": "9100", "MANUALQA_SERVER__ALLOWED_HOSTS": "a, b"})
    assert s.server.port == 9100 and s.answer.mode == "extractive"
    assert s.server.allowed_hosts == ["a", "b"]
    assert s.data_dir == Path("/srv/mqa")
    assert load_settings(cfg, env={"MANUALQA_DATA": "/x"}).data_dir == Path("/x")


@pytest.mark.parametrize("text, env, message", [
    ("[server]\nport = 'eighty'\n", {}, "server.port"),
    ("[serverz]\nport = 1\n", {}, "unknown setting serverz"),
    ("[server]\nportt = 1\n", {}, "unknown setting server.portt"),
    ("[answer]\nmode = 'poetry'\n", {}, "answer.mode"),
    ("[search]\nmode = 'fuzzy'\n", {}, "search.mode"),
    ("not toml = = =", {}, "invalid TOML"),
    ("", {"MANUALQA_SERVER__ALLOW_ANONYMOUS_READ": "maybe"}, "ALLOW_ANONYMOUS_READ"),
    ("", {"MANUALQA_NOPE__X": "1"}, "unknown section"),
])
def test_bad_values_name_the_key(tmp_path: Path, text: str, env: dict[str, str], message: str) -> None:
    cfg = tmp_path / "m.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_settings(cfg, env=env)


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml", env={})


def test_sections_are_the_rooms_own_parameter_classes(tmp_path: Path) -> None:
    """Configuration loads into ingest's and retrieval's own dataclasses; a room's validation speaks."""
    from ingest.models import ChunkParams, ParseLimits
    from retrieval.types import SearchParams

    cfg = tmp_path / "m.toml"
    cfg.write_text('[chunking]\nmax_chars = 700\n[search]\nrrf_k = 20\n[ingest]\ntimeout_s = 9\n')
    s = load_settings(cfg, env={"MANUALQA_SEARCH__LEXICAL_WEIGHT": "0.5"})
    assert isinstance(s.chunking, ChunkParams) and s.chunking.max_chars == 700
    assert isinstance(s.search, SearchParams) and (s.search.rrf_k, s.search.lexical_weight) == (20, 0.5)
    assert isinstance(s.ingest, ParseLimits) and s.ingest.timeout_s == 9.0
    cfg.write_text('[chunking]\ncontext = "everything"\n')
    with pytest.raises(ConfigError, match="chunking: chunk context must be one of"):
        load_settings(cfg, env={})
