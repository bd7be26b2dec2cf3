"""What a search is allowed to read: an index version built with the query's embedding model, and the
manuals a question is scoped to (by file name, title or sha256 prefix). The search (retrieval.search),
the answer pipeline and the HTTP routes resolve a `manuals` scope the same way, with the same message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrieval.embedders.base import Embedder
from retrieval.reader import IndexReader
from retrieval.types import RetrievalError

MIN_SHA_PREFIX = 8


def check_embedding(version: IndexReader, embedder: Embedder) -> None:
    """Refuse an index whose vectors come from another embedding model than the query's."""
    emb = version.info.embedding
    built_id, built_hash = emb.model_id, emb.model_hash
    if not built_id or not built_hash:
        raise RetrievalError(f"index version {version.id} does not record its embedding model; re-ingest")
    if built_id != embedder.model_id or built_hash != embedder.model_hash:
        raise RetrievalError(
            f"index version {version.id} was built with embedding model {built_id} "
            f"(sha256 {built_hash[:12]}); this gateway uses {embedder.model_id} "
            f"(sha256 {embedder.model_hash[:12]}) — re-ingest or configure the same model"
        )


def _text(manual: Mapping[str, object], key: str) -> str:
    """A manual's str field (file_name, title, sha256); RetrievalError where it is not one."""
    value = manual[key]
    if not isinstance(value, str):
        raise RetrievalError(f"manual {key} is not text: {value!r}")
    return value


def resolve_manuals(known: Sequence[Mapping[str, object]], wanted: Sequence[str]) -> list[str]:
    """Map file names, titles (case-insensitive) or sha256 prefixes to manual sha256s."""
    if isinstance(wanted, str):
        wanted = [wanted]
    shas: list[str] = []
    unknown: list[str] = []
    for raw in wanted:
        entry = str(raw).strip()
        low = entry.lower()
        matches = [_text(m, "sha256") for m in known
                   if low and (_text(m, "file_name").lower() == low or _text(m, "title").lower() == low
                               or _text(m, "file_name").lower().rsplit(".", 1)[0] == low
                               or (len(low) >= MIN_SHA_PREFIX and _text(m, "sha256").startswith(low)))]
        if not matches:
            unknown.append(entry)
        shas.extend(s for s in matches if s not in shas)
    if unknown:
        listing = "; ".join(f"{m['file_name']} ({m['title']}, {_text(m, 'sha256')[:12]})" for m in known) or "none"
        raise RetrievalError(
            f"unknown manual(s): {', '.join(repr(u) for u in unknown)}. "
            f"Known manuals: {listing}. Use a file name, a title or a sha256 prefix of at least "
            f"{MIN_SHA_PREFIX} characters."
        )
    return shas
