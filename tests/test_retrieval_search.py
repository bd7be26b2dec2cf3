"""Hybrid search on a real index version built from the sample PDFs (real model, FAISS, SQLite).

The `embedder` fixture (the packaged MiniLM model) comes from tests/conftest.py.

The version is built here with ChunkStore + VectorIndex (the same parts retrieval.versions uses),
and a tiny store object exposes it through `open(version)`, the only store method search uses.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ingest.models import ChunkParams, ParseLimits
from retrieval.chunkstore import ChunkStore
from retrieval.embedders import Embedder, passage_text
from retrieval.manifest_schema import decode_manifest
from retrieval.search import fuse, is_navigation, search, search_with_timings
from retrieval.types import CLOSEST, RetrievalError, SearchParams
from retrieval.vectors import VectorIndex

REPO = Path(__file__).resolve().parents[1]
VORON = REPO / "sample_manuals" / "voron0_setup_guide.pdf"
NOAA = REPO / "sample_manuals" / "noaa_lcp_pistonboard_user_manual.pdf"

# Part numbers, pin and signal names, each printed on one page of one sample manual.
EXACT_TOKENS = {"LM61460": NOAA.name, "UCB1SDA": NOAA.name, "MSP430FR5989": NOAA.name,
                "PC13": VORON.name, "M112": VORON.name, "STM32F103": VORON.name}


class OneVersionStore:
    """Stands in for retrieval.versions.IndexStore: one immutable version directory."""

    def __init__(self, root: Path, embedder: Embedder, pdfs: list[Path]) -> None:
        from ingest.chunker import chunk_manual
        from ingest.sandbox import parse_pdf

        vdir = root / "v-test"
        vdir.mkdir(parents=True)
        chunks_db = ChunkStore.create(vdir / "chunks.db")
        all_vectors = []
        for pdf in pdfs:
            parsed = parse_pdf(pdf, ParseLimits())
            chunks = chunk_manual(parsed, ChunkParams())
            chunks_db.add_manual(parsed)
            chunks_db.add_chunks(chunks)
            all_vectors.append(embedder.encode([passage_text(c.heading, c.text) for c in chunks]))
        chunks_db.commit()
        chunks_db.close()
        VectorIndex.build(np.vstack(all_vectors)).save(vdir / "vectors.faiss")
        self.manifest = {"embedding": {"model_id": embedder.model_id, "model_hash": embedder.model_hash,
                                       "dim": embedder.dim}}
        (vdir / "manifest.json").write_text(json.dumps(self.manifest))
        self.vdir = vdir
        self._version = SimpleNamespace(id="v-test", manifest=self.manifest, info=decode_manifest(self.manifest),
                                        chunks=ChunkStore(vdir / "chunks.db", readonly=True),
                                        vectors=VectorIndex.load(vdir / "vectors.faiss"))

    def open(self, version: str | None = None) -> SimpleNamespace:
        if version not in (None, "v-test"):
            raise RetrievalError(f"no index version {version!r}")
        return self._version


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> OneVersionStore:
    return OneVersionStore(tmp_path_factory.mktemp("idx"), embedder, [VORON, NOAA])


def pages_with(store: OneVersionStore, token: str) -> set[tuple[str, int]]:
    v = store.open()
    return {(m["file_name"], p) for m in v.chunks.manuals() for p in range(1, m["page_count"] + 1)
            if token in (v.chunks.page_text(m["sha256"], p) or "")}


def test_lexical_finds_exact_tokens_that_dense_misses(store: OneVersionStore, embedder: Embedder) -> None:
    dense_missed = []
    for token, manual in EXACT_TOKENS.items():
        expected = pages_with(store, token)
        assert expected and {m for m, _ in expected} == {manual}, token
        hits = search(store, embedder, f"What is {token}?", SearchParams(k=5))
        top = next(h for h in hits if h.lexical_rank == 1)
        assert token in top.text and (top.manual, top.page) in expected
        assert hits.index(top) <= 2, f"{token}: lexical #1 fell to {hits.index(top) + 1} after fusion"
        dense = search(store, embedder, f"What is {token}?", SearchParams(k=5, mode="dense"))
        if not any(token in h.text for h in dense):
            dense_missed.append(token)
    # The point of the lexical side: the embedding model blurs some of these exact tokens.
    assert dense_missed, "dense search found every exact token; this test no longer shows anything"


def test_board_name_phrase(store: OneVersionStore, embedder: Embedder) -> None:
    hits = search(store, embedder, "SKR Mini E3", SearchParams(k=5))
    assert hits[0].manual == VORON.name and "SKR Mini E3" in hits[0].text.replace("\n", " ")


def test_hybrid_ordered_by_fused_score_and_every_hit_has_cosine(store: OneVersionStore,
                                                                 embedder: Embedder) -> None:
    q = "how do I flash new firmware onto the board"
    # the fused order alone (the best-sentence step re-orders it: tests/test_sentence_rank.py)
    hits = search(store, embedder, q, SearchParams(k=8, rrf_k=60, sentence_weight=0.0, term_weight=0.0))
    assert len(hits) == 8
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    qv = embedder.encode_query(q)
    for h in hits:
        expected = sum(1 / (60 + r) for r in (h.dense_rank, h.lexical_rank) if r is not None)
        if is_navigation(h.heading, h.text):
            expected *= 0.5  # tables of contents are demoted
        assert h.score == pytest.approx(expected)
        assert h.dense_score is not None
        passage = embedder.encode([passage_text(h.heading, h.text)])[0]
        assert h.dense_score == pytest.approx(float(passage @ qv), abs=1e-4)
    assert any(h.dense_rank and h.lexical_rank for h in hits)


def test_table_of_contents_is_ranked_after_real_passages(store: OneVersionStore, embedder: Embedder) -> None:
    # The NOAA manual's contents page lists "Firmware Flash ... 11": it matches the question on both
    # sides, but a technician needs page 11, not the page that points to it.
    q = "how do I flash the firmware"
    wide = search(store, embedder, q, SearchParams(k=20), manuals=["noaa_lcp_pistonboard_user_manual.pdf"])
    toc = [h for h in wide if is_navigation(h.heading, h.text)]
    assert toc, "the contents page should still be found (just not first)"
    top = search(store, embedder, q, SearchParams(k=5), manuals=["noaa_lcp_pistonboard_user_manual.pdf"])
    assert not any(is_navigation(h.heading, h.text) for h in top)
    assert top[0].page == 11
    assert is_navigation("Contents", "") and not is_navigation("Wiring", "Connect FAN0 ... then 24V.")


def test_lexical_only_hits_get_a_cosine_too(store: OneVersionStore, embedder: Embedder) -> None:
    hits = search(store, embedder, "LM61460 UCB1SDA PC13 M112", SearchParams(k=10, candidates=5))
    lexical_only = [h for h in hits if h.dense_rank is None]
    assert lexical_only and all(isinstance(h.dense_score, float) for h in lexical_only)


def test_modes_and_timings(store: OneVersionStore, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    q = "wiring the stepper motors"
    dense = search(store, embedder, q, SearchParams(k=5, mode="dense"))
    lexical = search(store, embedder, q, SearchParams(k=5, mode="lexical"))
    assert all(h.lexical_rank is None and h.dense_rank for h in dense)
    assert all(h.dense_rank is None and h.lexical_rank for h in lexical)
    assert [h.dense_rank for h in dense] == [1, 2, 3, 4, 5]
    hits, t = search_with_timings(store, embedder, q, SearchParams(k=5))
    assert set(t) == {"embed_ms", "dense_ms", "lexical_ms", "fuse_ms", "sentence_ms", "rerank_ms", "total_ms",
                      CLOSEST}
    assert t[CLOSEST] == pytest.approx(dense[0].dense_score, abs=1e-6)  # the closest passage, kept or not
    assert t["total_ms"] >= t["embed_ms"] + t["dense_ms"] + t["lexical_ms"] > 0
    given = embedder.encode_query(q)
    embedded: list[str] = []
    encode_query = embedder.encode_query
    monkeypatch.setattr(embedder, "encode_query", lambda text: embedded.append(text) or encode_query(text))
    same, t2 = search_with_timings(store, embedder, q, SearchParams(k=5), query_vector=given)
    # the vector given is used: the question is not embedded again (said by counting, not by a
    # stopwatch: a few ms are no proof of anything on a busy box)
    assert [h.chunk_id for h in same] == [h.chunk_id for h in hits] and embedded == [] and t2["embed_ms"] >= 0
    with pytest.raises(RetrievalError, match="mode"):
        search(store, embedder, q, SearchParams(mode="fuzzy"))


def test_scope_by_file_name_title_and_sha_prefix(store: OneVersionStore, embedder: Embedder) -> None:
    manuals = {m["file_name"]: m for m in store.open().chunks.manuals()}
    noaa = manuals[NOAA.name]
    scopes = ([NOAA.name], [noaa["title"].upper()], [noaa["sha256"][:8]], [NOAA.stem])
    for scope in scopes:
        hits = search(store, embedder, "SKR Mini E3 firmware flashing", SearchParams(k=10), manuals=scope)
        assert hits and {h.manual for h in hits} == {NOAA.name}, scope
    both = search(store, embedder, "firmware", SearchParams(k=20), manuals=[NOAA.name, VORON.name])
    assert {h.manual for h in both} == {NOAA.name, VORON.name}


def test_unknown_scope_lists_known_manuals(store: OneVersionStore, embedder: Embedder) -> None:
    with pytest.raises(RetrievalError) as err:
        search(store, embedder, "firmware", manuals=["prusa_mk4.pdf"])
    assert "prusa_mk4.pdf" in str(err.value) and VORON.name in str(err.value) and NOAA.name in str(err.value)
    sha = store.open().chunks.manuals()[0]["sha256"]
    with pytest.raises(RetrievalError, match="at least 8"):
        search(store, embedder, "firmware", manuals=[sha[:6]])


def test_embedding_model_mismatch_is_refused(store: OneVersionStore, embedder: Embedder) -> None:
    other = SimpleNamespace(model_id="local:bge-small-en", model_hash="f" * 64,
                            encode_query=embedder.encode_query)
    with pytest.raises(RetrievalError, match="was built with embedding model .*re-ingest or configure"):
        search(store, other, "firmware")
    same_name_other_weights = SimpleNamespace(model_id=embedder.model_id, model_hash="0" * 64,
                                              encode_query=embedder.encode_query)
    with pytest.raises(RetrievalError, match="this gateway uses"):
        search(store, same_name_other_weights, "firmware")


@pytest.mark.parametrize("query", ['"unbalanced', "-", "foo:bar", "*", "(", "NEAR(", "AND OR NOT",
                                   "🔥🔧", "x" * 2000, "heading:firmware", "^E3", "ﬁrmware ﬂash"])
def test_hostile_queries_return_results_not_errors(store: OneVersionStore, embedder: Embedder,
                                                   query: str) -> None:
    hits = search(store, embedder, query, SearchParams(k=3))
    assert len(hits) == 3  # the dense side always has something to offer


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_an_error(store: OneVersionStore, embedder: Embedder, query: str) -> None:
    with pytest.raises(RetrievalError, match="empty"):
        search(store, embedder, query)


def test_unknown_version_propagates(store: OneVersionStore, embedder: Embedder) -> None:
    with pytest.raises(RetrievalError, match="no index version"):
        search(store, embedder, "firmware", version="v-nope")


def test_fuse_is_reciprocal_rank_fusion() -> None:
    fused = fuse([[(7, 0.9), (3, 0.5)], [(3, 12.0), (9, 4.0)]], rrf_k=60)
    assert fused == pytest.approx({7: 1 / 61, 3: 1 / 62 + 1 / 61, 9: 1 / 62})


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_vector_index_round_trip_and_scoped_search(tmp_path: Path, kind: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3000, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    VectorIndex.build(x, kind=kind).save(tmp_path / "v.faiss")
    vi = VectorIndex.load(tmp_path / "v.faiss")
    assert (vi.ntotal, vi.dim, vi.kind) == (3000, 32, kind)
    assert np.array_equal(vi.reconstruct(np.array([5, 2999])), x[[5, 2999]])
    assert vi.search(x[42], 1)[0][0] == 42
    exact = x @ x[42]
    for allowed in (np.arange(100, 200), np.arange(0, 2500), np.array([7, 1500, 2998])):
        got = vi.search(x[42], 5, allowed)
        assert {r for r, _ in got} <= set(allowed.tolist())
        best = allowed[np.argsort(-exact[allowed])][:len(got)]
        assert got[0][0] == best[0] and got[0][1] == pytest.approx(exact[best[0]], abs=1e-5)
    assert vi.cosine(x[42], np.array([42, 7])) == pytest.approx(exact[[42, 7]], abs=1e-5)
    with pytest.raises(RetrievalError, match="normalised"):
        VectorIndex.build(x * 3)


def _navigation_by_leaders_only(heading: str, text: str) -> bool:
    """is_navigation as first written (the leader pattern alone), to check the quicker pre-check against."""
    from retrieval.search import _LEADER_RE, _NAV_HEADING_RE

    if _NAV_HEADING_RE.match(heading or ""):
        return True
    leaders = len(_LEADER_RE.findall(text or ""))
    if leaders < 4:
        return False
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return leaders >= 0.4 * max(1, len(lines))


def test_the_navigation_pre_check_changes_no_verdict(sample_pdfs: list[Path]) -> None:
    from ingest.chunker import chunk_manual
    from ingest.sandbox import parse_pdf

    crafted = ["Intro . . . 3\nWiring . . . 7\nFirmware . . . 11\nIndex . . . 20",
               "Intro… 3\nWiring… 7\nFirmware… 11\nIndex… 20", "Intro...3\nSafety.. .4\nUse. ..5\nCare...6",
               "Set 1.5 V. Then 2.5 V. Then 3.5 V. Done.", "", "Step 1... wait 5 s"]
    cases = [("", t) for t in crafted] + [
        (c.heading, c.text) for pdf in sample_pdfs for c in chunk_manual(parse_pdf(pdf, ParseLimits()), ChunkParams())]
    verdicts = [(is_navigation(h, t), _navigation_by_leaders_only(h, t)) for h, t in cases]
    assert all(new == old for new, old in verdicts)
    assert sum(new for new, _ in verdicts) >= 4  # navigation chunks are among them, not only plain text


def test_a_hit_as_a_dict_is_what_asdict_gives(store: OneVersionStore, embedder: Embedder) -> None:
    from dataclasses import asdict

    hits = search(store, embedder, "input voltage range", SearchParams(k=3))
    assert hits and all(h.to_dict() == asdict(h) and list(h.to_dict()) == list(asdict(h)) for h in hits)
