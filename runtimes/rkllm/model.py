"""What RKLLMRuntime holds between load() and unload(): the model's init parameters and what it is given.

Split out of runtimes.rkllm.runtime (which keeps generation, the artifact chain and gate 2) so that
each stays readable: the declared runtime version, the preflight and rkllm_init with the profile's
options (RKLLMParam and RKLLMExtendParam, listed in runtime.py's docstring), unload, the context
limit, the token estimate (librkllmrt exposes no tokenizer) and the prompt as rkllm_run receives it
(system text, earlier turns folded in, an optional custom chat template). `RKLLMModel` is
RKLLMRuntime's base; nothing builds one alone.
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Mapping
from pathlib import Path

from runtimes.base import (
    GenerationConfig,
    GenerationError,
    Runtime,
    RuntimeUnavailable,
    as_float,
    as_int,
    as_optional_str,
    options_generation,
)
from runtimes.rkllm import layouts as L
from runtimes.rkllm import probe
from runtimes.rkllm.binding import RKLLMBinding, unsupported_version_message
from runtimes.rkllm.preflight import preflight_in_subprocess

BYTES_PER_TOKEN = 3  # conservative: real tokenizers average ~4 bytes of English per token


class RKLLMModel(Runtime):
    """The loaded RKLLM model, its init parameters and its prompts; RKLLMRuntime adds generation and the gates."""

    def __init__(self, artifact: str, options: Mapping[str, object] | None = None) -> None:
        super().__init__(artifact, options)
        self.binding: RKLLMBinding | None = None
        self.lib_path: str | None = None
        self.driver_root = str(self.options.get("driver_root", "/"))
        self._busy = threading.Lock()
        self._system_in_template: str | None = None
        self._load_samples: list[dict[str, int]] = []
        self._load_detail = ""
        self._init_params: dict[str, int | float] = {}
        self._worker: threading.Thread | None = None

    # ------------------------------------------------------------ load / unload

    @property
    def declared_version(self) -> str:
        version = self.options.get("runtime_version")
        if not version:
            raise RuntimeUnavailable("the rkllm backend needs runtime_version in the profile (the locked "
                                     f"RKLLM runtime version; supported: {L.SUPPORTED_TEXT})")
        return str(version)

    def load(self) -> None:
        version = self.declared_version
        if L.abi_family(version) is None:
            raise RuntimeUnavailable(unsupported_version_message(version))
        lib, looked = probe.find_library(as_optional_str(self.options.get("lib_path")))
        if lib is None:
            raise RuntimeUnavailable(probe.library_missing_message(looked))
        if not Path(self.artifact).is_file():
            raise RuntimeUnavailable(f"RKLLM model {self.artifact} not found (convert one with "
                                     "rkllm-toolkit; see docs/rkllm.md)")
        ctx = as_int(self.options.get("max_context_len", 4096))
        if self.options.get("isolate_version_check", True):
            preflight_in_subprocess(lib, version, str(self.artifact), ctx)
        binding = RKLLMBinding(lib, version)
        box = binding.default_param()
        self._fill_param(box.param, ctx)
        binding.init(box)  # raises on failure or on a printed version other than the declared one
        self.binding, self.lib_path = binding, lib

    def _fill_param(self, p: ctypes.Structure, ctx: int) -> None:
        o = self.options
        gen = options_generation(o) or GenerationConfig()  # the profile's [generation] table
        self._model_b = str(self.artifact).encode()
        p.model_path = self._model_b
        p.max_context_len = ctx
        p.max_new_tokens = as_int(o.get("max_new_tokens", -1))
        p.top_k = as_int(o.get("top_k", gen.top_k))
        p.top_p = as_float(o.get("top_p", gen.top_p))
        p.temperature = as_float(o.get("temperature", gen.temperature))
        p.repeat_penalty = as_float(o.get("repeat_penalty", gen.repeat_penalty))
        if "n_keep" in o:
            p.n_keep = as_int(o["n_keep"])
        p.skip_special_token = True
        p.is_async = False
        ext = p.extend_param
        if "base_domain_id" in o:
            ext.base_domain_id = as_int(o["base_domain_id"])
        if "embed_flash" in o:
            ext.embed_flash = int(bool(o["embed_flash"]))
        cpus = o.get("enabled_cpus")
        if cpus:
            if not isinstance(cpus, (list, tuple, str)):
                raise TypeError(f"options enabled_cpus must be a list of CPU ids, not {cpus!r}")
            ext.enabled_cpus_num = len(cpus)
            ext.enabled_cpus_mask = sum(1 << as_int(c) for c in cpus)
        self._init_params = {name: getattr(p, name) for name in
                             ("max_context_len", "max_new_tokens", "top_k", "n_keep", "repeat_penalty")}
        self._init_params.update(top_p=round(p.top_p, 4), temperature=round(p.temperature, 4),
                                 enabled_cpus_mask=ext.enabled_cpus_mask, base_domain_id=ext.base_domain_id,
                                 embed_flash=ext.embed_flash)

    def unload(self) -> None:
        if self.binding is None:
            return
        worker = self._worker
        if worker is not None and worker.is_alive():
            self._cancel.set()
            self.binding.abort()
            worker.join(timeout=30)  # the handle must not be freed under a running rkllm_run
            if worker.is_alive():
                raise GenerationError("rkllm_run did not return within 30 s of rkllm_abort; "
                                      "the model stays loaded")
        self.binding.destroy()
        self.binding = None

    # ------------------------------------------------------------ prompt

    def count_tokens(self, text: str) -> int:
        """No tokenizer is exposed by librkllmrt: a conservative estimate (3 UTF-8 bytes per token)."""
        return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)

    @property
    def context_length(self) -> int:
        ctx = as_int(self.options.get("max_context_len", 4096))
        limit = self.binding.init_info.get("max_context_limit") if self.binding else None
        return min(ctx, int(limit)) if limit else ctx

    def _chat_template(self) -> Mapping[str, object] | None:
        """options chat_template: {"system": ..., "prefix": ..., "postfix": ...}; None when not set."""
        tpl = self.options.get("chat_template")
        if not tpl:
            return None
        if not isinstance(tpl, Mapping):
            raise TypeError(f"options chat_template must be a table (system, prefix, postfix), not {tpl!r}")
        return tpl

    def _prompt(self, messages: list[dict[str, str]]) -> tuple[str, str]:
        """(system text, user prompt). The runtime applies the model's own chat template around the
        prompt (since 1.2.0), so no template is applied here; earlier turns are folded in as text."""
        system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
        turns = [m for m in messages if m.get("role") != "system"]
        if not turns or turns[-1].get("role") != "user":
            raise GenerationError("the last message must come from the user")
        history = "".join(f"{m['role'].capitalize()}: {m['content']}\n" for m in turns[:-1])
        return system, history + turns[-1]["content"]

    def _apply_system(self, system: str, prompt: str) -> str:
        tpl = self._chat_template()
        assert self.binding is not None
        if not tpl:
            return f"{system}\n\n{prompt}" if system else prompt
        rendered = str(tpl.get("system", "{system}")).replace("{system}", system)
        if rendered != self._system_in_template:
            self.binding.set_chat_template(rendered, str(tpl.get("prefix", "")), str(tpl.get("postfix", "")))
            self._system_in_template = rendered
        return prompt
