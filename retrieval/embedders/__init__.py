"""Embedders behind one Protocol (base.Embedder) and one factory (factory.load_embedder).

Backends: onnx (the built-in default, onnxruntime) and st (sentence-transformers + torch, for index
versions built with such a model; an optional extra). Importing this package imports neither backend.
"""

from retrieval.embedders.base import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MODEL,
    PACKAGED_MODEL,
    Embedder,
    MissingExtraError,
    passage_text,
)
from retrieval.embedders.factory import load_embedder, spec_of

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_MODEL", "PACKAGED_MODEL", "Embedder", "MissingExtraError",
           "load_embedder", "passage_text", "spec_of"]
