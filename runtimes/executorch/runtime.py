"""ExecuTorch: a .pte program (XNNPACK delegate, static KV cache) plus its tokenizer and template.

The artifact is the folder deploy/export_executorch.py writes (model.pte, tokenizer.json,
chat_template.jinja, PROVENANCE.json). The program's forward takes input_ids[1, n] and
cache_position[n] and returns logits; its KV cache lives in the program's mutable buffers, so
one call reads the prompt and then one call per token decodes. Sampling, stop strings and the
template are done here in Python. Gate 2 reads which backends the program delegates to from the
.pte itself and whether this executorch build registers XNNPACK, and checks that the delegated
program ran (the runtime refuses to load a program whose delegate is missing).
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

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
    distribution_version,
    json_table,
    recorded_generation,
)
from runtimes.defaults import physical_cores
from runtimes.executorch import chain
from runtimes.executorch.sampling import Sampler, TextStream

if TYPE_CHECKING:
    from executorch.runtime import Method
    from jinja2 import Template
    from tokenizers import Tokenizer

ET_INSTALL_HINT = "pip install 'manualqa[executorch]' (executorch 1.5.1 with XNNPACK, beside the CPU torch)"


def import_executorch() -> tuple[ModuleType, ModuleType]:
    """executorch.runtime and torch, imported only when a program is loaded."""
    try:
        torch = importlib.import_module("torch")
        et_runtime = importlib.import_module("executorch.runtime")
    except ImportError as exc:  # also a broken native extension
        raise RuntimeUnavailable(
            f"the executorch backend needs executorch ({exc}); install it with: {ET_INSTALL_HINT}") from exc
    return et_runtime, torch


class ExecuTorchRuntime(Runtime):
    backend = "executorch"
    native = True  # the ExecuTorch and XNNPACK C++ in our address space: runs in a supervised worker
    install_hint = ET_INSTALL_HINT
    requires = "executorch"  # probe_environment: missing when this one is not installed
    distributions = {"executorch": "executorch", "torch": "torch"}


    def __init__(self, artifact: str, options: Mapping[str, object] | None = None) -> None:
        super().__init__(artifact, options)
        self.n_threads = as_int(self.options.get("n_threads") or physical_cores())
        self.cache_dir = as_optional_str(self.options.get("cache_dir"))
        self.folder: Path | None = None
        self.hashes: dict[str, str] = {}
        self.provenance: dict[str, object] | None = None
        self.delegates: dict[str, chain.MethodPlan] = {}
        self.max_seq_len = 0
        self.prefill_whole = False
        self.load_ms = 0.0
        self.forward_calls = 0
        self._torch: ModuleType | None = None
        self._et: ModuleType | None = None  # executorch.runtime
        self._method: Method | None = None
        self._tokenizer: Tokenizer | None = None
        self._template: Template | None = None
        self._special: dict[str, object] = {}
        self._eos: set[int] = set()
        self._chain: ArtifactChain | None = None
        self._gen_lock = threading.Lock()

    # -- loading -------------------------------------------------------------------------------
    def load(self) -> None:
        et_runtime, torch = import_executorch()
        folder = chain.resolve_folder(self.artifact)
        self.hashes, self.provenance = chain.check_folder(folder, self.cache_dir)
        tokenizer = self._load_tokenizer(folder)
        started = time.perf_counter()
        # Before the program loads: the XNNPACK delegate keeps the pool it finds at init, and a reset
        # under a loaded method freed that pool beneath it (bench: "malloc(): mismatching next->prev_size",
        # SIGABRT while loading, in 1 of 2 loads).
        self._set_threads()
        try:
            self.delegates = chain.program_delegates(folder / chain.PTE)
            program = et_runtime.Runtime.get().load_program(folder / chain.PTE)
            method = program.load_method("forward")
        except Exception as exc:  # a corrupt program, or one needing a backend this build lacks
            raise RuntimeUnavailable(f"ExecuTorch could not load {folder / chain.PTE}: {exc}") from exc
        program_facts = json_table((self.provenance or {}).get("program"), "PROVENANCE.json's program")
        self.max_seq_len = as_int(program_facts.get("max_seq_len") or self.options.get("n_ctx") or 2048)
        self.prefill_whole = str(program_facts.get("prefill", "")).startswith("dynamic")
        self.folder, self._et, self._torch, self._method = folder, et_runtime, torch, method
        vocab = self._vocab_of_program()
        if tokenizer.get_vocab_size(with_added_tokens=True) > vocab:
            raise RuntimeUnavailable(
                f"tokenizer {folder / chain.TOKENIZER} has {tokenizer.get_vocab_size()} tokens but the "
                f"program's logits cover {vocab}: this tokenizer does not belong to this model")
        self.load_ms = (time.perf_counter() - started) * 1000
        self._chain = None

    def _load_tokenizer(self, folder: Path) -> Tokenizer:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        from tokenizers import Tokenizer

        try:
            tokenizer = self._tokenizer = Tokenizer.from_file(str(folder / chain.TOKENIZER))
        except Exception as exc:  # tokenizers raises its own Exception type for a bad file
            raise RuntimeUnavailable(f"{folder / chain.TOKENIZER} is not a usable tokenizer: {exc}") from exc
        self._special = chain.special_tokens(folder)
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        self._template = env.from_string((folder / chain.TEMPLATE).read_text(encoding="utf-8"))
        eos_text = self._special.get("eos_token") or "<|im_end|>"
        if not isinstance(eos_text, str):
            raise TypeError(f"{folder / chain.SPECIAL}: eos_token must be a string, not {eos_text!r}")
        self._eos = {i for i in (self._special.get("eos_token_id"), tokenizer.token_to_id(eos_text))
                     if isinstance(i, int)}
        if not self._eos:
            raise RuntimeUnavailable(f"{folder}: the tokenizer has no end-of-sequence token {eos_text!r}")
        return tokenizer

    def _set_threads(self) -> None:
        try:
            from executorch.extension.pybindings import portable_lib

            portable_lib._unsafe_reset_threadpool(self.n_threads)
        except (ImportError, AttributeError, RuntimeError):
            pass  # an older build: its default thread pool size applies

    def _vocab_of_program(self) -> int:
        logits = self._forward([0], 0)
        self.forward_calls = 0
        return int(logits.shape[-1])

    def unload(self) -> None:
        self._cancel.set()
        got = self._gen_lock.acquire(timeout=30)
        try:
            self._method = None
        finally:
            if got:
                self._gen_lock.release()

    # -- generation ----------------------------------------------------------------------------
    def _forward(self, ids: list[int], start: int) -> Any:  # the logits: a torch.Tensor
        torch = self._torch
        if self._method is None or torch is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        tokens = torch.tensor([ids], dtype=torch.long)
        positions = torch.arange(start, start + len(ids), dtype=torch.long)
        self.forward_calls += 1
        return self._method.execute([tokens, positions])[0][0, -1]

    def stream(self, messages: list[dict[str, str]], config: GenerationConfig,
               cancel: threading.Event | None = None) -> Iterator[str | GenerationStats]:
        if self._method is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        if not self._gen_lock.acquire(timeout=max(config.timeout_s, 0.001)):
            raise GenerationError("the executorch runtime is busy with another generation")
        try:
            yield from self._generate(messages, config, cancel)
        finally:
            self._gen_lock.release()

    def _generate(self, messages: list[dict[str, str]], config: GenerationConfig,
                  cancel: threading.Event | None) -> Iterator[str | GenerationStats]:
        if self._torch is None or self._tokenizer is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        torch, tokenizer = self._torch, self._tokenizer
        self._cancel.clear()
        started = time.perf_counter()
        deadline = started + config.timeout_s
        ids = self._prompt_ids(messages)
        if len(ids) >= self.max_seq_len:
            raise GenerationError(f"prompt of {len(ids)} tokens does not fit the program's "
                                  f"{self.max_seq_len}-token KV cache")

        def stopped() -> str:
            if self._cancel.is_set() or (cancel is not None and cancel.is_set()):
                return "cancelled"
            return "timeout" if time.perf_counter() > deadline else ""

        reason = ""
        if self.prefill_whole:
            logits = self._forward(ids, 0)
        else:
            for pos, token in enumerate(ids):
                logits = self._forward([token], pos)
                if (reason := stopped()):
                    break
        sampler = Sampler(torch, config, list(ids))
        text = TextStream(tokenizer, config.stop)
        budget = min(config.max_tokens, self.max_seq_len - len(ids))
        output = 0
        first = last = None
        while not reason:
            token = sampler.next(logits)
            if token in self._eos:
                reason = "stop"
                break
            output += 1
            piece, hit_stop = text.push(token)
            if piece:
                last = time.perf_counter()
                first = first or last
                yield piece
            if hit_stop:
                reason = "stop"
            elif output >= budget:
                reason = "length"
            elif not (reason := stopped()):
                logits = self._forward([token], len(ids) + output - 1)
        if (tail := text.flush()) and reason not in ("cancelled", "timeout"):
            last = time.perf_counter()
            first = first or last
            yield tail
        tps = (output - 1) / (last - first) if first and last and last > first and output > 1 else None
        yield GenerationStats(
            prompt_tokens=len(ids), output_tokens=output,
            ttft_ms=None if first is None else (first - started) * 1000, decode_tps=tps,
            total_ms=(time.perf_counter() - started) * 1000, stop_reason=reason,
            backend_perf={"forward_calls": self.forward_calls, "prefill_whole": self.prefill_whole})

    def _prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        if self._template is None or self._tokenizer is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        try:
            rendered = self._template.render(messages=messages, add_generation_prompt=True,
                                             bos_token=self._special.get("bos_token") or "",
                                             eos_token=self._special.get("eos_token") or "")
        except Exception as exc:  # a template that cannot render these messages
            raise GenerationError(f"chat template could not render the messages: {exc}") from exc
        return list(self._tokenizer.encode(rendered, add_special_tokens=False).ids)

    def count_tokens(self, text: str) -> int:
        if self._tokenizer is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    @property
    def context_length(self) -> int:
        return self.max_seq_len or as_int(self.options.get("n_ctx") or 2048)

    # -- description and gate 2 ----------------------------------------------------------------
    def _runtime_facts(self) -> dict[str, object]:
        registry = self._et.Runtime.get().backend_registry if self._et is not None else None
        return {"library": "executorch", "executorch": distribution_version("executorch"),
                "torch": distribution_version("torch"), "n_threads": self.n_threads,
                "registered_backends": sorted(registry.registered_backend_names) if registry else []}

    def describe(self) -> ArtifactChain:
        if self._chain is not None:
            return self._chain
        if self.folder is None or self._tokenizer is None:
            raise RuntimeUnavailable("the executorch runtime is not loaded; call load() first")
        data = chain.chain_data(self.folder, self.hashes, self.provenance, self._runtime_facts(),
                                self.delegates, recorded_generation(self.options), self.context_length,
                                vocab_size=self._tokenizer.get_vocab_size(with_added_tokens=True))
        self._chain = ArtifactChain(data)
        return self._chain

    def verify_backend(self) -> GateCheck:
        if self._method is None or self._et is None:
            return GateCheck(2, False, "the executorch runtime is not loaded")
        forward = self.delegates.get("forward")
        available = bool(self._et.Runtime.get().backend_registry.is_available(chain.XNNPACK))
        evidence: dict[str, object] = {"program": self.delegates, "xnnpack_registered": available,
                                    "forward_calls_since_load": self.forward_calls, "runtime": self._runtime_facts()}
        traced: chain.Trace = {}
        if self.folder and self._torch is not None:
            traced = chain.traced_forward(self._et, self._torch, self.folder / chain.PTE)
        evidence["etdump"] = traced
        if forward is None or chain.XNNPACK not in forward["delegates"] or not forward["delegate_calls"]:
            kernel_calls = forward["kernel_calls"] if forward is not None else 0
            return GateCheck(2, False, "the program delegates nothing to XNNPACK: every operator runs on "
                             f"ExecuTorch's portable kernels ({kernel_calls} kernel calls)",
                             evidence)
        if not available:
            return GateCheck(2, False, "this executorch build has no XnnpackBackend registered", evidence)
        if self.forward_calls == 0:
            return GateCheck(2, False, "the program has not run since load (no smoke generation)", evidence)
        if "error" in traced:
            return GateCheck(2, False, f"ExecuTorch's event trace could not be read: {traced['error']}", evidence)
        if not traced.get("delegate_calls") or not traced.get("delegate_operator_events"):
            return GateCheck(2, False, "the event trace of a forward shows no XNNPACK work "
                             f"({traced.get('portable_kernel_calls', 0)} portable kernel calls)", evidence)
        top = ", ".join(list(traced["delegate_operators"])[:3])
        return GateCheck(2, True, f"XNNPACK delegate ran: {traced['delegate_calls']} delegate calls, "
                         f"{traced['delegate_operator_events']} XNNPACK operator events ({top}) and "
                         f"{traced['portable_kernel_calls']} portable kernel calls in a traced forward; "
                         f"{self.forward_calls} forwards served", evidence)
