"""Kept for the names callers import from here; the embedders live in retrieval/embedders/."""

from retrieval.embedders.base import (
    DEFAULT_MODEL,
    PACKAGED_MODEL,
    Embedder,
    MissingExtraError,
    packaged_model_dir,
    passage_text,
)
from retrieval.embedders.factory import load_embedder, spec_of

__all__ = ["DEFAULT_MODEL", "PACKAGED_MODEL", "Embedder", "MissingExtraError", "load_embedder",
           "packaged_model_dir", "passage_text", "spec_of"]
