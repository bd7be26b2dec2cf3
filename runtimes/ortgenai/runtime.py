"""ONNX Runtime GenAI: an onnxruntime-genai model folder (deploy/convert_smollm2.py builds one).

The artifact is a folder (genai_config.json, model.onnx + weights, tokenizer.json, chat template); its
sha256 is runtimes.hashing.tree_sha256's. The chain comes from the folder's PROVENANCE.json (source and
its hash, conversion tools and commands, quantization), the loaded library's versions and the
tokenizer's files. A folder whose files differ from what PROVENANCE.json recorded is refused, and so is
a tokenizer whose vocabulary does not fit the model. Gate 2 reads ONNX Runtime's node placement from
its session log (runtimes.ortgenai.log) and the device onnxruntime-genai reports for the model.
"""

from __future__ import annotations

import importlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    Runtime,
    RuntimeUnavailable,
    as_int,
    as_optional_str,
    json_table,
    recorded_generation,
)
from runtimes.defaults import physical_cores
from runtimes.hashing import tree_sha256, tree_size
from runtimes.ortgenai import log as ortgenai_log
from runtimes.ortgenai.chain import chain_data, check_folder

if TYPE_CHECKING:  # onnxruntime-genai has no annotations: its classes name what a value is, unchecked
    from onnxruntime_genai import Model, Tokenizer

GENAI_INSTALL_HINT = "pip install 'manualqa[genai]' (onnxruntime-genai 0.18, CPython 3.11+)"


def import_og() -> ModuleType:
    try:
        return importlib.import_module("onnxruntime_genai")
    except ImportError as exc:  # also a missing or broken shared library
        raise RuntimeUnavailable(
            f"the ortgenai backend needs onnxruntime-genai ({exc}); install it with: {GENAI_INSTALL_HINT}"
        ) from exc


class OrtGenAIRuntime(Runtime):
    backend = "ortgenai"
    native = True  # ONNX Runtime's C++ in our address space: runs in a supervised worker
    install_hint = GENAI_INSTALL_HINT
    requires = "onnxruntime_genai"  # probe_environment: missing when this one is not installed
    distributions = {"onnxruntime_genai": "onnxruntime-genai", "onnxruntime": "onnxruntime"}


    def __init__(self, artifact: str, options: Mapping[str, object] | None = None) -> None:
        super().__init__(artifact, options)
        self.execution_provider = str(self.options.get("execution_provider") or "cpu")
        self.provider_options = dict(json_table(self.options.get("provider_options"), "options provider_options"))
        self.n_threads = as_int(self.options.get("n_threads") or physical_cores())
        self.n_ctx = as_int(self.options.get("n_ctx") or 0)  # 0: the model's own context length
        self.cache_dir = as_optional_str(self.options.get("cache_dir"))
        self.folder: Path | None = None
        self.genai_config: dict[str, object] = {}
        self.provenance: dict[str, object] | None = None
        self.sha256 = ""
        self.files: dict[str, str] = {}
        self.nodes: dict[str, int] = {}
        self.device_type = ""
        self.load_ms = 0.0
        self._og: ModuleType | None = None  # the onnxruntime_genai module
        self._model: Model | None = None
        self._tokenizer: Tokenizer | None = None
        self._chain: ArtifactChain | None = None
        self._gen_lock = threading.Lock()

    # -- loading -------------------------------------------------------------------------------
    def load(self) -> None:
        og = import_og()
        folder = Path(self.artifact).expanduser()
        self.genai_config, self.provenance = check_folder(folder)
        self.sha256, self.files = tree_sha256(folder, self.cache_dir)
        artifact = json_table((self.provenance or {}).get("artifact", {}), "PROVENANCE.json's artifact")
        recorded = artifact.get("files")
        if isinstance(recorded, dict):
            changed = sorted(n for n in set(recorded) | set(self.files) if recorded.get(n) != self.files.get(n))
            if changed:
                raise RuntimeUnavailable(
                    f"{folder}: {', '.join(changed)} differ(s) from what PROVENANCE.json recorded at conversion; "
                    "the folder was altered: rebuild it (deploy/convert_smollm2.py)")
        config = og.Config(str(folder))
        try:
            config.clear_providers()
            if self.execution_provider.lower() != "cpu":
                config.append_provider(self.execution_provider)
            for key, value in self.provider_options.items():
                config.set_provider_option(self.execution_provider, str(key), str(value))
            # the session's verbose log says where each node went (gate 2; runtimes.ortgenai.log); without
            # memory patterns ORT logs nothing per run at that level; threads as the profile says
            config.overlay(json.dumps({"model": {"decoder": {"session_options": {
                "log_severity_level": 0, "enable_mem_pattern": False, "intra_op_num_threads": self.n_threads}}}}))
        except Exception as exc:  # og raises RuntimeError for an unknown provider name
            raise RuntimeUnavailable(f"onnxruntime-genai refused execution provider "
                                     f"{self.execution_provider!r}: {exc}") from exc
        started = time.perf_counter()
        with ortgenai_log.capture_stderr() as lines:
            try:
                model = og.Model(config)
                tokenizer = og.Tokenizer(model)
            except Exception as exc:  # RuntimeError from the C++ side
                said = ortgenai_log.errors(lines)[-2:]
                detail = f"; onnxruntime said: {' | '.join(said)}" if said else ""
                raise RuntimeUnavailable(f"onnxruntime-genai could not load {folder} with execution provider "
                                         f"{self.execution_provider!r}: {exc}{detail}") from exc
        self.load_ms = (time.perf_counter() - started) * 1000
        self.nodes = ortgenai_log.placement(lines)
        self.device_type = str(getattr(model, "device_type", "") or "")
        self.folder, self._og, self._model, self._tokenizer = folder, og, model, tokenizer
        self._chain = None

    def unload(self) -> None:
        if self._model is None:
            return
        self._cancel.set()
        got = self._gen_lock.acquire(timeout=30)  # a generation in flight stops at its next token
        try:
            self._model = self._tokenizer = None
        finally:
            if got:
                self._gen_lock.release()

    def _require(self) -> tuple[ModuleType, Model, Tokenizer]:
        """The module, the model and its tokenizer (load() sets all three)."""
        if self._model is None or self._og is None or self._tokenizer is None:
            raise GenerationError("the ortgenai runtime is not loaded; call load() first")
        return self._og, self._model, self._tokenizer

    # -- generation ----------------------------------------------------------------------------
    def stream(self, messages: list[dict[str, str]], config: GenerationConfig,
               cancel: threading.Event | None = None) -> Iterator[str | GenerationStats]:
        og, model, tokenizer = self._require()
        if not self._gen_lock.acquire(timeout=max(config.timeout_s, 0.001)):
            raise GenerationError("the ortgenai runtime is busy with another generation")
        try:
            yield from self._generate(og, model, tokenizer, messages, config, cancel)
        finally:
            self._gen_lock.release()

    def _generate(self, og: ModuleType, model: Model, tokenizer: Tokenizer, messages: list[dict[str, str]],
                  config: GenerationConfig, cancel: threading.Event | None) -> Iterator[str | GenerationStats]:
        self._cancel.clear()
        started = time.perf_counter()
        deadline = started + config.timeout_s
        try:
            prompt = tokenizer.apply_chat_template(json.dumps(messages), add_generation_prompt=True)
            ids = tokenizer.encode(prompt)
        except Exception as exc:
            raise GenerationError(f"chat template could not render the messages: {exc}") from exc
        n_prompt = len(ids)
        if n_prompt >= self.context_length:
            raise GenerationError(f"the prompt has {n_prompt} tokens; the context holds {self.context_length}")
        params = og.GeneratorParams(model)
        max_length = min(self.context_length, n_prompt + config.max_tokens)
        search: dict[str, int | float | bool] = {"max_length": max_length, "repetition_penalty": config.repeat_penalty}
        if config.temperature > 0:
            search.update(do_sample=True, temperature=config.temperature, top_p=config.top_p,
                          top_k=config.top_k, random_seed=config.seed)
        else:
            search.update(do_sample=False)
        params.set_search_options(**search)
        stops = _StopText(config.stop)
        first = last = None
        output, reason = 0, ""
        try:
            generator = og.Generator(model, params)
            generator.append_tokens(ids)  # the prompt: one native call, not interruptible
            decoder = tokenizer.create_stream()
            while not generator.is_done():
                if self._cancel.is_set() or (cancel is not None and cancel.is_set()):
                    reason = "cancelled"
                    break
                if time.perf_counter() > deadline:
                    reason = "timeout"
                    break
                generator.generate_next_token()
                output += 1
                piece = stops.feed(decoder.decode(int(generator.get_next_tokens()[0])))
                if piece:
                    last = time.perf_counter()
                    first = first or last
                    yield piece
                if stops.hit:
                    reason = "stop"
                    break
        except Exception as exc:
            raise GenerationError(f"onnxruntime-genai generation failed: {exc}") from exc
        # the sequence holds prompt + output; an end-of-sequence token is not appended to it
        output = max(int(generator.token_count()) - n_prompt, 0) if hasattr(generator, "token_count") else output
        if not reason:  # the generator finished: end-of-sequence, or the length limit
            reason = "length" if n_prompt + output >= max_length else "stop"
        if tail := stops.flush():
            yield tail
        total = time.perf_counter() - started
        tps = (output - 1) / (last - first) if first and last and last > first and output > 1 else None
        yield GenerationStats(prompt_tokens=n_prompt, output_tokens=output,
                              ttft_ms=None if first is None else (first - started) * 1000, decode_tps=tps,
                              total_ms=total * 1000, stop_reason=reason,
                              backend_perf={"execution_provider": self.execution_provider,
                                            "device_type": self.device_type})

    def count_tokens(self, text: str) -> int:
        _, _, tokenizer = self._require()
        return len(tokenizer.encode(text))

    @property
    def context_length(self) -> int:
        model = json_table(self.genai_config.get("model", {}), "genai_config.json's model")
        own = as_int(model.get("context_length") or 0)
        if own and self.n_ctx:
            return min(own, self.n_ctx)
        return own or self.n_ctx or 2048

    # -- description and gate 2 ----------------------------------------------------------------
    def describe(self) -> ArtifactChain:
        if self._chain is not None:
            return self._chain
        if self.folder is None or self._og is None:
            raise RuntimeUnavailable("the ortgenai runtime is not loaded; call load() first")
        data = chain_data(self.folder, self.genai_config, self.provenance, files=self.files)
        data["backend"] = self.backend
        data["execution_provider"] = {"requested": self.execution_provider, "provider_options":
                                      self.provider_options, "device_type": self.device_type,
                                      "ort_node_placement": dict(self.nodes), "intra_op_num_threads": self.n_threads}
        data["runtime"] = {"library": "onnxruntime-genai", "version": str(getattr(self._og, "__version__", "unknown")),
                           **{k: v for k, v in self.probe_environment(self.options).versions.items()}}
        data["context"] = {"n_ctx": self.context_length}
        data["generation"] = recorded_generation(self.options)
        data["artifact"] = {"path": str(self.folder), "sha256": self.sha256, "size_bytes": tree_size(self.folder),
                            "files": dict(self.files)}
        self._chain = ArtifactChain(data)
        return self._chain

    def verify_backend(self) -> GateCheck:
        if self._model is None:
            return GateCheck(2, False, "the ortgenai runtime is not loaded")
        wanted = self.execution_provider
        evidence: dict[str, object] = {"requested": wanted, "device_type": self.device_type,
                                       "ort_node_placement": dict(self.nodes)}
        if not self.nodes:
            return GateCheck(2, False, "cannot confirm the execution provider: ONNX Runtime's session log named "
                                       f"no node placement (model device {self.device_type or 'unknown'})", evidence)
        ours = sum(n for ep, n in self.nodes.items() if ortgenai_log.provider_matches(wanted, ep))
        where = ", ".join(f"{n} on {ep}" for ep, n in sorted(self.nodes.items()))
        if ours == 0:
            return GateCheck(2, False, f"silent fallback: execution provider {wanted!r} was requested but ONNX "
                                       f"Runtime placed no node on it ({where}; model device "
                                       f"{self.device_type or 'unknown'})", evidence)
        return GateCheck(2, True, f"execution provider {wanted!r} does the work: ONNX Runtime placed {where} "
                                  f"(model device {self.device_type})", evidence)


class _StopText:
    """Stop strings over streamed text: holds back what could still become one, cuts at the first."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.pending = ""
        self.hit = False

    def feed(self, piece: str) -> str:
        if not self.stops:
            return piece
        self.pending += piece
        cut = min((i for s in self.stops if (i := self.pending.find(s)) >= 0), default=-1)
        if cut >= 0:
            out, self.pending, self.hit = self.pending[:cut], "", True
            return out
        keep = len(self.pending) - self.hold
        out, self.pending = self.pending[:max(keep, 0)], self.pending[max(keep, 0):]
        return out

    def flush(self) -> str:
        out, self.pending = self.pending, ""
        return out
