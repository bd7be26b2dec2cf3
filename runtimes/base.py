"""The one small contract every generation backend implements.

A backend loads an artifact, streams an answer to chat messages under a generation config
(yielding text pieces, then exactly one GenerationStats), can be cancelled from another thread,
unloads, and describes itself as an artifact chain: the record that lets any logged answer be
explained and any upgrade rolled back.
"""

from __future__ import annotations

import hashlib
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import ClassVar


class RuntimeUnavailable(Exception):
    """The backend cannot run here (missing library, driver or artifact); says what to install."""


class GenerationError(Exception):
    """A generation that failed after it started (runtime error, prompt too long, upstream down)."""


@dataclass
class GenerationConfig:
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 40
    repeat_penalty: float = 1.1
    seed: int = 0
    stop: list[str] = field(default_factory=list)
    timeout_s: float = 120.0  # wall-clock cap for one generation
    # A GBNF grammar the output must follow (set per answer by the gateway, e.g. "every sentence
    # ends with a citation of a passage given"); only backends with accepts_grammar use it.
    grammar: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> GenerationConfig:
        """The defaults with the known keys of data set, values as given: a profile's [generation] table is
        checked by runtimes.profiles, and the options a runtime is handed carry GenerationConfig.to_dict()."""
        config = cls()
        for key, value in data.items():
            if key in cls.__dataclass_fields__:
                setattr(config, key, value)
        return config


# A figure a backend reports about one generation: a count, a time, a flag or a name (backend_perf).
PerfFigure = str | int | float | bool | None


@dataclass
class GenerationStats:
    prompt_tokens: int = 0
    output_tokens: int = 0
    ttft_ms: float | None = None  # request start to first text piece
    decode_tps: float | None = None  # output tokens per second after the first token
    total_ms: float = 0.0
    stop_reason: str = "stop"  # "stop" | "length" | "cancelled" | "timeout" | "error"
    backend_perf: dict[str, PerfFigure] = field(default_factory=dict)  # figures the backend reports

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def canonical_json(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass
class ArtifactChain:
    """source/version -> conversion -> quantization -> backend -> runtime/driver -> tokenizer/template
    -> generation config, plus the artifact's sha256 and size. Its id is the hash of its JSON.
    The values are the backend's own record, written as JSON (canonical_json) and read by key."""

    data: dict[str, object]

    @property
    def chain_id(self) -> str:
        return hashlib.sha256(canonical_json(self.data).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, object]:
        return {"chain_id": self.chain_id, **self.data}


@dataclass
class GateCheck:
    gate: int  # 1: loads and answers; 2: the intended backend does the work; 3: rollback
    passed: bool
    detail: str
    evidence: dict[str, object] = field(default_factory=dict)


@dataclass
class Environment:
    """What doctor reads about a backend before loading anything (gate 1's first look)."""

    versions: dict[str, str | None] = field(default_factory=dict)  # [runtime] lock key -> installed
    missing: list[str] = field(default_factory=list)  # reasons the backend cannot run here at all
    evidence: dict[str, object] = field(default_factory=dict)


def as_int(value: object) -> int:
    """int(value) for a setting read from a profile's options or a JSON file (numbers, numeric strings);
    anything else raises the TypeError that int() raises."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"int() argument must be a string, a bytes-like object or a real number, "
                    f"not '{type(value).__name__}'")


def as_float(value: object) -> float:
    """float(value) for a setting read from a profile's options or a JSON file, as as_int."""
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"float() argument must be a string or a real number, not '{type(value).__name__}'")


def json_table(value: object, what: str) -> dict[str, object]:
    """A JSON object read from a file or a server: {} where it is absent (or null, or empty); a value of
    another kind raises a TypeError that names `what`."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{what} is not a JSON object: {value!r:.200}")
    return value


def as_optional_str(value: object) -> str | None:
    """A path or name setting: None when absent, a string as it is; anything else raises a TypeError."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected a string (a path or a name), not {type(value).__name__}: {value!r}")


def options_generation(options: Mapping[str, object]) -> GenerationConfig | None:
    """The generation config a runtime was handed in options["generation"] (Profile.runtime_options);
    None when there is none."""
    generation = options.get("generation")
    if not generation:
        return None
    if not isinstance(generation, Mapping):
        raise TypeError(f"options generation must be a table of GenerationConfig's keys, not {generation!r}")
    return GenerationConfig.from_dict(generation)


def recorded_generation(options: Mapping[str, object]) -> dict[str, object] | None:
    """options_generation as an artifact chain records it (None when there is none)."""
    config = options_generation(options)
    return config.to_dict() if config is not None else None


def distribution_version(name: str) -> str | None:
    """The installed version of a Python distribution, or None."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


class Runtime(ABC):
    """One loaded artifact on one backend. One generation at a time per instance.

    A backend's facts are class attributes, so that the registry stays the only list of backends.
    """

    backend: ClassVar[str]
    accepts_grammar: ClassVar[bool] = False  # True: stream() constrains output to config.grammar
    remote: ClassVar[bool] = False  # the model lives on another server: no local artifact to hash
    # runs native code that can crash: create_runtime puts it in a supervised worker process
    native: ClassVar[bool] = False
    # True: a cancel also stops the backend while it reads the prompt (llama.cpp's abort callback);
    # a supervisor then waits the same grace before the first token as after it
    aborts_prompt: ClassVar[bool] = False
    install_hint: ClassVar[str] = "check that the backend's module and its native library are installed"
    # [runtime] lock keys this backend's Python distributions answer (key -> distribution name)
    distributions: ClassVar[dict[str, str]] = {}
    requires: ClassVar[str] = ""  # a key of distributions without which the backend cannot run at all

    @classmethod
    def probe_environment(cls, options: Mapping[str, object]) -> Environment:
        """Versions and missing pieces readable without loading an artifact (no network)."""
        env = Environment(versions={key: distribution_version(dist) for key, dist in cls.distributions.items()})
        if cls.requires and env.versions.get(cls.requires) is None:
            missing = cls.distributions[cls.requires]
            env.missing.append(f"{missing} is not installed; install it with: {cls.install_hint}")
        return env

    def __init__(self, artifact: str, options: Mapping[str, object] | None = None) -> None:
        self.artifact = artifact
        self.options: dict[str, object] = dict(options or {})  # the profile's [options] (TOML values)
        self._cancel = threading.Event()

    @abstractmethod
    def load(self) -> None:
        """Load the artifact; raise RuntimeUnavailable with an install hint when it cannot."""

    @abstractmethod
    def stream(
        self,
        messages: list[dict[str, str]],
        config: GenerationConfig,
        cancel: threading.Event | None = None,
    ) -> Iterator[str | GenerationStats]:
        """Yield text pieces, then exactly one GenerationStats (also after cancel or timeout)."""

    def cancel(self) -> None:
        """Ask the generation in progress to stop soon (callable from any thread)."""
        self._cancel.set()

    def unload(self) -> None:  # noqa: B027 - optional for backends that hold nothing
        """Free the artifact."""

    @abstractmethod
    def describe(self) -> ArtifactChain:
        """The artifact chain (cheap after load)."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens of text with this artifact's tokenizer (an estimate where there is none)."""

    @property
    @abstractmethod
    def context_length(self) -> int:
        """Context window in tokens that prompt + output must fit."""

    @abstractmethod
    def verify_backend(self) -> GateCheck:
        """Gate 2: evidence that the intended device really does the work (no silent fallback).
        Called after a smoke generation."""
