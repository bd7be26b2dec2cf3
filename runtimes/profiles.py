"""Deployment profiles: one TOML file that says what is shipped where, and who answers for it.

A profile names the target device, the backend, the artifact (+ expected sha256), the locked
runtime/driver versions, the generation config, the embedding model, the owners and the rollback
profile. `manualqa doctor` (gateway.qualification.gates) checks it; which profile is active is
gateway state (gateway.records.active_profile). Relative paths inside a profile are relative to the
profile file.

This module reads and checks the TOML; what a profile declares and how its paths resolve is
runtimes.profile_spec (ProfileSpec, Profile's base, and ProfileError, re-exported here).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from runtimes.answer_bar import AnswerBarError, parse_answer_bar
from runtimes.base import GenerationConfig
from runtimes.profile_spec import BUILTIN_DIR as BUILTIN_DIR  # the names' old home: callers import them here
from runtimes.profile_spec import DEFAULT_EMBEDDING_MODEL as DEFAULT_EMBEDDING_MODEL
from runtimes.profile_spec import ArtifactSpec, ProfileSpec
from runtimes.profile_spec import ProfileError as ProfileError
from runtimes.registry import BACKENDS, is_remote

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def builtin_profiles() -> dict[str, str]:
    """The profiles that ship inside the package (runtimes/builtin/*.toml), by file name: the default
    works from a wheel with no files around. profiles/ links to the same files (one source)."""
    from importlib.resources import files

    folder = files("runtimes") / "builtin"
    return {f.name: f.read_text(encoding="utf-8") for f in folder.iterdir() if f.name.endswith(".toml")}

_TOP_KEYS = {"answers", "name", "description", "target_device", "backend", "rollback", "artifact", "runtime",
             "options", "generation", "embedding", "owners"}
_ARTIFACT_KEYS = {"path", "sha256", "source", "conversion", "quantization"}
_OWNER_KEYS = ("conversion", "integration")


class Profile(ProfileSpec):
    """A profile as the reader returns it: its declarations (ProfileSpec) and its rollback profile."""

    def load_rollback(self) -> Profile:
        where = self.rollback_location()
        if where is None:
            raise ProfileError(f"profile {self.name!r} names no rollback profile (rollback = \"\")")
        if where == self.path or (not self.builtin and where.resolve() == self.path.resolve()):
            raise ProfileError(f"profile {self.name!r} names itself as its rollback profile")
        return load_profile(where, base_dir=self.rollback_base_dir if self.rollback_file else None)


def _known_backends() -> tuple[str, ...]:
    return tuple(BACKENDS)


def _table(data: Mapping[str, object], key: str, where: str, required: bool = False) -> dict[str, object]:
    if key not in data:
        if required:
            raise ProfileError(f"{where}: missing table [{key}]")
        return {}
    value = data[key]
    if not isinstance(value, dict):
        raise ProfileError(f"{where}: {key} must be a table ([{key}])")
    return value


def _string(data: Mapping[str, object], key: str, where: str, required: bool = True, label: str = "") -> str:
    label = label or key
    if key not in data:
        if required:
            raise ProfileError(f"{where}: missing key {label}")
        return ""
    value = data[key]
    if not isinstance(value, str):
        raise ProfileError(f"{where}: {label} must be a string, not {value!r}")
    return value


def _check_generation(gen: Mapping[str, object], where: str) -> None:
    defaults = GenerationConfig()
    for key, value in gen.items():
        if key not in GenerationConfig.__dataclass_fields__:
            known = ", ".join(GenerationConfig.__dataclass_fields__)
            raise ProfileError(f"{where}: unknown key generation.{key} (known: {known})")
        expected = type(getattr(defaults, key))
        ok = isinstance(value, expected) and not isinstance(value, bool)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if expected is list:
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not ok:
            raise ProfileError(f"{where}: generation.{key} must be {expected.__name__}, not {value!r}")


def parse_profile(text: str, path: Path, base_dir: Path | None = None) -> Profile:
    """Validate profile TOML text; every error names the file and the key."""
    where = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{where}: invalid TOML: {exc}") from exc
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ProfileError(f"{where}: unknown key(s) {', '.join(unknown)}")
    name = _string(data, "name", where).strip()
    if not name:
        raise ProfileError(f"{where}: name must not be empty")
    backend = _string(data, "backend", where).strip()
    if backend not in _known_backends() and ":" not in backend:
        raise ProfileError(f"{where}: unknown backend {backend!r} (known: {', '.join(_known_backends())}, "
                           "or module:Class)")
    art = _table(data, "artifact", where, required=True)
    bad = sorted(set(art) - _ARTIFACT_KEYS)
    if bad:
        raise ProfileError(f"{where}: unknown key(s) artifact.{', artifact.'.join(bad)}")
    artifact = ArtifactSpec(**{k: _string(art, k, where, required=k == "path", label=f"artifact.{k}")
                               for k in _ARTIFACT_KEYS})
    if not artifact.path and not is_remote(backend):
        raise ProfileError(f"{where}: artifact.path must not be empty for backend {backend!r}")
    sha = artifact.sha256.strip().lower()
    if sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
        raise ProfileError(f"{where}: artifact.sha256 must be 64 hex digits, not {artifact.sha256!r}")
    artifact.sha256 = sha
    runtime: dict[str, str] = {}
    for key, value in _table(data, "runtime", where).items():
        if not isinstance(value, str):
            raise ProfileError(f"{where}: runtime.{key} must be a version string, not {value!r}")
        runtime[key] = value
    generation = _table(data, "generation", where)
    _check_generation(generation, where)
    owners_table = _table(data, "owners", where, required=True)
    owners = {k: _string(owners_table, k, where, label=f"owners.{k}") for k in _OWNER_KEYS}
    embedding = _table(data, "embedding", where)
    for section, table, allowed in (("owners", owners_table, set(_OWNER_KEYS)), ("embedding", embedding, {"model"})):
        extra = sorted(set(table) - allowed)
        if extra:
            raise ProfileError(f"{where}: unknown key(s) {section}.{f', {section}.'.join(extra)}")
    try:
        answers = parse_answer_bar(_table(data, "answers", where))
    except AnswerBarError as exc:
        raise ProfileError(f"{where}: {exc}") from exc
    return Profile(
        name=name,
        description=_string(data, "description", where, required=False),
        target_device=_string(data, "target_device", where),
        backend=backend,
        rollback=_string(data, "rollback", where).strip(),
        artifact=artifact,
        runtime=dict(runtime),
        options=dict(_table(data, "options", where)),
        generation=dict(generation),
        embedding_model=_string(embedding, "model", where, required=False, label="embedding.model")
        or DEFAULT_EMBEDDING_MODEL,
        owners=owners,
        answers=answers,
        path=path,
        text=text,
        base_dir=base_dir,
    )


def load_profile(path: str | Path, base_dir: str | Path | None = None) -> Profile:
    """Read and validate a profile file (or a built-in one, `<builtin>/NAME.toml`)."""
    p = Path(path)
    if p.parent == BUILTIN_DIR:
        shipped = builtin_profiles()
        if p.name not in shipped:
            raise ProfileError(f"no built-in profile {p.name!r} (built in: {', '.join(sorted(shipped))})")
        return parse_profile(shipped[p.name], p)
    if not p.is_file():
        raise ProfileError(f"profile not found: {p}")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{p}: cannot read: {exc}") from exc
    return parse_profile(text, p.absolute(), Path(base_dir) if base_dir else None)


def builtin_default_profile() -> Profile:
    """The x86 CPU profile on the embedded model: works from a wheel, with no files around."""
    return load_profile(BUILTIN_DIR / "x86-cpu.toml")

