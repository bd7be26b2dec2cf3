"""llama.cpp through llama-cpp-python: CPU by default, GPU layers when n_gpu_layers asks for them.

The chat template is the GGUF's own; the artifact chain comes from the GGUF header (read without
loading the model), the library's version and system info, and the file's cached sha256.
Gate 2 is decided from where llama.cpp's load log says the model buffers went.

A cancel or timeout reaches llama.cpp through its abort callback as well as between tokens: reading
a long prompt is one native call, and without the callback a Stop there could only be honoured by
killing the worker (a model reload for the next question).

The load options, load()/unload() and the chat formatter are LlamaCppModel's, the base class in
runtimes.llamacpp.model; this module keeps generation, the artifact chain and gate 2.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict

from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    RuntimeUnavailable,
    recorded_generation,
)
from runtimes.defaults import LLM_INSTALL_HINT
from runtimes.llamacpp import cpu_build
from runtimes.llamacpp import log as llamacpp_log
from runtimes.llamacpp.gguf import chain_sections
from runtimes.llamacpp.model import LlamaCppModel, _never, import_llama_cpp

if TYPE_CHECKING:  # llama-cpp-python's own annotations (py.typed); imported for real only in load()
    import numpy as np
    import numpy.typing as npt
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar


class _Progress(TypedDict):
    """What the stopping criterion counts during one generation."""

    sampled: int
    last_len: int
    reason: str


class LlamaCppRuntime(LlamaCppModel):
    backend = "llamacpp"
    native = True  # C code in our address space: runs in a supervised worker (runtimes.supervised)
    accepts_grammar = True
    aborts_prompt = True  # through llama_set_abort_callback (_install_abort)
    install_hint = LLM_INSTALL_HINT
    distributions = {"llama_cpp_python": "llama_cpp_python"}

    # -- generation ----------------------------------------------------------------------------
    def stream(
        self,
        messages: list[dict[str, str]],
        config: GenerationConfig,
        cancel: threading.Event | None = None,
    ) -> Iterator[str | GenerationStats]:
        llm, lib = self._require()
        if not self._gen_lock.acquire(timeout=max(config.timeout_s, 0.001)):
            raise GenerationError("the llamacpp runtime is busy with another generation")
        try:
            yield from self._generate(llm, lib, messages, config, cancel)
        finally:
            self._gen_lock.release()

    def _generate(
        self,
        llm: Llama,
        lib: ModuleType,
        messages: list[dict[str, str]],
        config: GenerationConfig,
        cancel: threading.Event | None,
    ) -> Iterator[str | GenerationStats]:
        self._cancel.clear()
        started = time.perf_counter()
        deadline = started + config.timeout_s
        own_cancel = self._cancel
        state: _Progress = {"sampled": 0, "last_len": -1, "reason": ""}

        def stop_now() -> bool:
            if state["reason"]:
                return True
            if own_cancel.is_set() or (cancel is not None and cancel.is_set()):
                state["reason"] = "cancelled"
            elif time.perf_counter() > deadline:
                state["reason"] = "timeout"
            return bool(state["reason"])

        def check(input_ids: npt.NDArray[np.intc], _logits: npt.NDArray[np.single]) -> bool:
            # Called once per sampled token (and once more at the end, at the same length).
            n = len(input_ids)
            if n != state["last_len"]:
                state["sampled"] += 1
                state["last_len"] = n
            return stop_now()

        try:
            assert self._formatter is not None  # set by load() with the model
            rendered = self._formatter(messages=messages)
            prompt_ids = llm.tokenize(
                rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
            )
        except Exception as exc:  # a template that cannot render these messages
            raise GenerationError(f"chat template could not render the messages: {exc}") from exc
        stop = list(config.stop)
        if rendered.stop:
            stop += [rendered.stop] if isinstance(rendered.stop, str) else list(rendered.stop)
        criteria = lib.StoppingCriteriaList([check, *(rendered.stopping_criteria or [])])
        ctx = llm.ctx
        lib.llama_perf_context_reset(ctx)
        llm.__dict__.pop("grammar_sampler", None)
        first = last = None
        finish = "stop"
        aborted = False
        self._abort_check = stop_now
        self._listen_for_abort(True)
        try:
            grammar = self._grammar(lib, config.grammar) if config.grammar else None
            chunks = llm.create_completion(
                prompt=prompt_ids, stream=True, max_tokens=config.max_tokens,
                temperature=config.temperature, top_p=config.top_p, top_k=config.top_k,
                repeat_penalty=config.repeat_penalty, seed=config.seed, stop=stop or None,
                stopping_criteria=criteria, grammar=grammar,
            )
            if not isinstance(chunks, Iterator):  # stream=True: llama-cpp-python returns a generator
                raise GenerationError("llama-cpp-python did not stream the completion")
            for chunk in chunks:
                choice = chunk["choices"][0]
                piece = choice.get("text")
                if piece:
                    last = time.perf_counter()
                    if first is None:
                        first = last
                        self._listen_for_abort(False)  # the prompt is read: decoding from here
                    yield piece
                if finished := choice.get("finish_reason"):
                    finish = finished
        except (ValueError, RuntimeError) as exc:
            if not state["reason"]:
                raise GenerationError(f"llama.cpp generation failed: {exc}") from exc
            aborted = True  # llama_decode returned "aborted": our own callback stopped it
        finally:
            self._abort_check = _never
            self._listen_for_abort(False)
        total = time.perf_counter() - started
        reason = state["reason"] or ("length" if finish == "length" else "stop")
        # sampled counts the end-of-generation token, or the token refused by a cancel/timeout;
        # an aborted computation sampled nothing for the token it was computing.
        output = state["sampled"] - (0 if reason == "length" or aborted else 1)
        output = max(output, 0)
        prompt = len(prompt_ids)
        perf = lib.llama_perf_context(ctx)
        self._last_perf = {
            "prompt_eval_tokens": perf.n_p_eval, "prompt_eval_ms": round(perf.t_p_eval_ms, 3),
            "eval_tokens": perf.n_eval, "eval_ms": round(perf.t_eval_ms, 3),
        }
        if aborted:
            self._last_perf["aborted"] = True  # stopped inside a native computation (the prompt)
        checked = llm.__dict__.get("grammar_sampler")
        if checked is not None:  # how often the grammar refused the model's own choice of token
            self._last_perf.update(grammar_drawn=checked.drawn, grammar_redrawn=checked.refused)
        tps = None
        if first is not None and last is not None and last > first and output > 1:
            tps = (output - 1) / (last - first)
        yield GenerationStats(
            prompt_tokens=prompt, output_tokens=output,
            ttft_ms=None if first is None else (first - started) * 1000,
            decode_tps=tps, total_ms=total * 1000, stop_reason=reason, backend_perf=dict(self._last_perf),
        )

    def _grammar(self, lib: ModuleType, source: str) -> LlamaGrammar:
        """The compiled grammar; the few distinct ones (one per passage count) are kept."""
        cache: dict[str, LlamaGrammar] = self.__dict__.setdefault("_grammars", {})
        if source not in cache:
            try:
                with llamacpp_log.capture(lib):
                    cache[source] = lib.LlamaGrammar.from_string(source, verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise GenerationError(f"llama.cpp could not parse the output grammar: {exc}") from exc
        return cache[source]

    def count_tokens(self, text: str) -> int:
        llm, _ = self._require()
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    @property
    def context_length(self) -> int:
        return int(self._llm.n_ctx()) if self._llm is not None else self.n_ctx

    # -- description and gate 2 ----------------------------------------------------------------
    def system_info(self) -> str:
        lib = self._lib or import_llama_cpp()
        info: bytes = lib.llama_print_system_info()
        return info.decode("utf-8", errors="replace").strip()

    def describe(self) -> ArtifactChain:
        if self._chain is not None:
            return self._chain
        if self.gguf is None or self.path is None or self._lib is None:
            raise RuntimeUnavailable("the llamacpp runtime is not loaded; call load() first")
        sections = chain_sections(self.gguf)
        info = self.system_info()
        runtime = {
            "library": "llama-cpp-python",
            "version": getattr(self._lib, "__version__", "unknown"),
            "llama_cpp_system_info": info,
            "cpu_build": cpu_build.classify(info),  # portable baseline or beyond it (a native build)
            "gpu_offload_supported": bool(self._lib.llama_supports_gpu_offload()),
            "n_gpu_layers": self.n_gpu_layers,
            "grammar_sampling": self.grammar_sampling,
        }
        sections["context"]["n_ctx"] = self.context_length
        data: dict[str, object] = {
            **sections, "backend": self.backend, "runtime": runtime,
            "generation": recorded_generation(self.options),
            "artifact": {"path": str(self.path), "sha256": self.sha256, "size_bytes": self.path.stat().st_size},
        }
        self._chain = ArtifactChain(data)
        return self._chain

    def verify_backend(self) -> GateCheck:
        if self._llm is None or self._lib is None or self.placement is None:
            return GateCheck(2, False, "the llamacpp runtime is not loaded")
        supports = bool(self._lib.llama_supports_gpu_offload())
        info = self.system_info()
        evidence: dict[str, object] = {
            **self.placement, "gpu_offload_supported": supports, "system_info": info,
            "n_gpu_layers": self.n_gpu_layers, "last_generation": dict(self._last_perf)}
        on_gpu, summary = llamacpp_log.gpu_evidence(self.placement)
        build = cpu_build.classify(info)
        evidence["cpu_build"] = build
        if self.n_gpu_layers == 0:  # -1 means "all layers" in llama.cpp
            detail = f"CPU backend as intended ({summary}); {cpu_build.describe(build)}"
            return GateCheck(2, True, detail, evidence)
        if on_gpu and supports:
            return GateCheck(2, True, f"GPU backend: {summary}", evidence)
        why = ("this llama-cpp-python build has no GPU support" if not supports
               else "llama.cpp placed no layers on a GPU device")
        return GateCheck(
            2, False,
            f"silent CPU fallback: requested {self.n_gpu_layers} GPU layers but all buffers are on CPU "
            f"({why}; {summary})",
            evidence,
        )
