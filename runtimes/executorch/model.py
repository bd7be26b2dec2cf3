"""What ExecuTorchRuntime holds between load() and unload(): the program, its tokenizer and template.

Split out of runtimes.executorch.runtime (which keeps generation, the artifact chain and gate 2):
how the artifact folder is checked, its tokenizer, chat template and end-of-sequence tokens read,
and the .pte program loaded (the thread pool set first) and checked against the tokenizer; one call
of the program's forward; and the tokens of a prompt and of a text. `ExecuTorchModel` is
ExecuTorchRuntime's base; nothing builds one alone.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from runtimes.base import (
    ArtifactChain,
    GenerationError,
    Runtime,
    RuntimeUnavailable,
    as_int,
    as_optional_str,
    json_table,
)
from runtimes.defaults import physical_cores
from runtimes.executorch import chain

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


class ExecuTorchModel(Runtime):
    """The loaded program, its tokenizer and chat template, and one forward; ExecuTorchRuntime's base."""

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

    # -- running the program -------------------------------------------------------------------
    def _forward(self, ids: list[int], start: int) -> Any:  # the logits: a torch.Tensor
        torch = self._torch
        if self._method is None or torch is None:
            raise GenerationError("the executorch runtime is not loaded; call load() first")
        tokens = torch.tensor([ids], dtype=torch.long)
        positions = torch.arange(start, start + len(ids), dtype=torch.long)
        self.forward_calls += 1
        return self._method.execute([tokens, positions])[0][0, -1]

    # -- tokens and context --------------------------------------------------------------------
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
