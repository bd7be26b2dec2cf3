"""ChunkStore (SQLite + FTS5) and the FTS5 query builder, on real SQLite files."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ingest.models import Chunk, PageText, ParsedManual
from retrieval.chunkstore import ChunkStore
from retrieval.fts import build_match
from retrieval.types import RetrievalError

SHA_A = "a" * 64
SHA_B = "b" * 64

HOSTILE = [
    '"unbalanced', "-", "foo:bar", "*", "(", ")", "NEAR(", "NEAR(a b", "AND OR NOT", "AND", "not",
    "^", "^start", "a^b", "col:", ":", "{heading text}: x", "a + b", "'single'", '""', '"a" "b',
    "🔥🔧", "héllo wörld 日本語 ﬁrmware", "x" * 2000, ("word " * 400), "\x00\x01", "OR OR OR",
    "heading:flash", "text : (flash OR", "NEAR(flash firmware, 2)", "flash*", "-flash", "\\", "%_",
]


def manual(sha: str, name: str, title: str, pages: list[str]) -> ParsedManual:
    return ParsedManual(sha256=sha, file_name=name, title=title, page_count=len(pages), size_bytes=1234,
                        pages=[PageText(i + 1, t) for i, t in enumerate(pages)],
                        pages_without_text=[i + 1 for i, t in enumerate(pages) if not t])


def chunk(sha: str, page: int, ordinal: int, text: str, heading: str = "") -> Chunk:
    return Chunk(f"{sha[:8]}-{page}-{ordinal}", sha, page, ordinal, heading, text)


@pytest.fixture()
def store(tmp_path: Path) -> ChunkStore:
    s = ChunkStore.create(tmp_path / "chunks.db")
    s.add_manual(manual(SHA_A, "printer.pdf", "Printer Setup", [
        "Installing the ﬁrmware", "", "Wiring the board"]))
    s.add_manual(manual(SHA_B, "pump.pdf", "Pump Manual", ["Pump intro", "Pump faults"]))
    s.add_chunks([
        chunk(SHA_A, 1, 0, "Installing the ﬁrmware: copy klipper.bin to the SD card as ﬁrmware.bin.",
              heading="Firmware"),
        chunk(SHA_A, 1, 1, "Use M3x8 screws to mount the SKR Mini E3 board on the frame."),
        chunk(SHA_A, 3, 2, "The status LED is on pin PA13. Fans go to FAN0.", heading="Wiring"),
    ])
    s.add_chunks([
        chunk(SHA_B, 1, 0, "Flashing the pump controller needs the service cable.", heading="Service"),
        chunk(SHA_B, 2, 1, "Error ERR_42 means the impeller is blocked. Clear it and restart."),
        chunk(SHA_B, 2, 2, "The SKR board is not used in the pump; the E3 fuse protects the motor."),
    ])
    s.commit()
    yield s
    s.close()


def test_rows_are_contiguous_faiss_positions(store: ChunkStore) -> None:
    assert store.chunk_count() == 6
    more = store.add_chunks([chunk(SHA_B, 2, 3, "one more passage about the pump")])
    assert more == [6]
    assert store.rows_for_manuals([SHA_B]).tolist() == [3, 4, 5, 6]
    assert store.rows_for_manuals([SHA_A, SHA_B]).dtype == np.int64
    assert store.rows_for_manuals([]).size == 0


def test_get_rows_keeps_order_and_joins_manual(store: ChunkStore) -> None:
    got = store.get_rows([4, 0])
    assert [g["row"] for g in got] == [4, 0]
    assert got[0]["file_name"] == "pump.pdf" and got[0]["title"] == "Pump Manual"
    assert got[1]["heading"] == "Firmware" and got[1]["page"] == 1
    with pytest.raises(RetrievalError, match="missing"):
        store.get_rows([99])


def test_manuals_pages_and_chunks_round_trip(store: ChunkStore) -> None:
    ms = {m["sha256"]: m for m in store.manuals()}
    assert ms[SHA_A]["pages_without_text"] == [2]
    assert ms[SHA_A]["chunk_count"] == 3 and ms[SHA_B]["page_count"] == 2
    assert store.page_text(SHA_A, 3) == "Wiring the board"
    assert store.page_text(SHA_A, 9) is None
    chunks = store.chunks_for_manual(SHA_B)
    assert [c.ordinal for c in chunks] == [0, 1, 2]
    text = "Error ERR_42 means the impeller is blocked. Clear it and restart."
    # a chunk handed over without a language is stored with the one its text shows
    assert chunks[1] == dataclasses.replace(chunk(SHA_B, 2, 1, text), language="en")


def test_lexical_stems_and_folds_ligatures(store: ChunkStore) -> None:
    rows = [r for r, _ in store.lexical("flashing firmware", 10)]
    assert set(rows) >= {0, 3}  # "ﬁrmware" (ligature) and "Flashing" both found
    scores = [s for _, s in store.lexical("flashing firmware", 10)]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


@pytest.mark.parametrize("query, row", [
    ("M3x8", 1), ("what is PA13 used for", 2), ("ERR_42", 4), ("err_42 on the pump", 4),
    ("SKR Mini E3", 1), ("FAN0", 2),
])
def test_lexical_finds_exact_technical_tokens(store: ChunkStore, query: str, row: int) -> None:
    assert store.lexical(query, 3)[0][0] == row


def test_phrase_outranks_scattered_terms(store: ChunkStore) -> None:
    # Row 5 mentions SKR and E3 separately; row 1 has the whole board name.
    ranked = [r for r, _ in store.lexical("where does the SKR Mini E3 go", 5)]
    assert ranked[0] == 1 and 5 in ranked


def test_lexical_scope_filter(store: ChunkStore) -> None:
    assert {r for r, _ in store.lexical("SKR E3 firmware flashing", 10, [SHA_B])} <= {3, 4, 5}
    assert store.lexical("SKR", 10, []) == []
    assert store.lexical("the of and", 10) == []


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(store: ChunkStore, query: str) -> None:
    match = build_match(query)
    assert match is None or isinstance(match, str)
    assert isinstance(store.lexical(query, 5), list)
    assert isinstance(store.lexical(query, 5, [SHA_A]), list)


def test_random_garbage_never_raises(store: ChunkStore) -> None:
    rng = random.Random(7)
    alphabet = 'abcXYZ019 "\'-:*()^{}+.,;[]_/\\NEARORANDNOT\t\n🔥é日'
    for _ in range(300):
        q = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
        store.lexical(q, 5)


def test_build_match_shapes() -> None:
    assert build_match("") is None and build_match("   ") is None and build_match("how do I") is None
    assert build_match("🔥🔧 ***") is None
    m = build_match("How do I flash the SKR Mini E3?")
    assert m == '"skr mini e3" OR "flash" OR "skr" OR "mini" OR "e3"'
    assert build_match("ERR_42") == '"err 42"'
    assert build_match('foo:bar "unbalanced') == '"foo bar" OR "unbalanced"'
    assert build_match("x" * 2000).count('"') == 2
    assert build_match(" ".join(f"w{i}" for i in range(200))).count(" OR ") < 40


def test_readonly_refuses_writes_and_create_refuses_overwrite(store: ChunkStore, tmp_path: Path) -> None:
    store.close()
    ro = ChunkStore(tmp_path / "chunks.db", readonly=True)
    assert ro.chunk_count() == 6 and ro.lexical("PA13", 1)[0][0] == 2
    with pytest.raises(RetrievalError, match="read-only"):
        ro.add_chunks([chunk(SHA_A, 1, 9, "x")])
    with pytest.raises(sqlite3.OperationalError):  # the connection itself is read-only too
        ro._db.execute("DELETE FROM chunks")
    ro.close()
    with pytest.raises(RetrievalError, match="already exists"):
        ChunkStore.create(tmp_path / "chunks.db")
    with pytest.raises(RetrievalError, match="does not exist"):
        ChunkStore(tmp_path / "nope.db", readonly=True)


def test_lexical_scope_with_several_and_interleaved_manuals(store: ChunkStore) -> None:
    sha_c = "c" * 64
    store.add_manual(manual(sha_c, "mixer.pdf", "Mixer", ["Mixer"]))
    store.add_chunks([chunk(sha_c, 1, 0, "Mixer firmware flashing over USB.")])  # row 6
    both = {r for r, _ in store.lexical("firmware flashing", 10, [SHA_B, sha_c])}  # two ranges
    assert both == {3, 6}
    store.add_chunks([chunk(SHA_B, 2, 3, "Pump firmware notes.")])  # row 7: SHA_B no longer contiguous
    assert {r for r, _ in store.lexical("firmware flashing", 10, [SHA_B])} == {3, 7}
    assert {r for r, _ in store.lexical("firmware flashing", 10, [SHA_A])} == {0}
    assert store.lexical("firmware", 10, ["f" * 64]) == []


# -- term pruning on large stores (forced here with a small row budget) --------------------------

COMMON = ["printer", "board", "firmware", "power", "cable", "motor", "screw", "frame"]
FILLER = [f"word{i}" for i in range(60)]


@pytest.fixture()
def big(tmp_path: Path) -> ChunkStore:
    """1,200 chunks where the common words are in most chunks and a few chunks hold exact tokens."""
    rng = random.Random(11)
    s = ChunkStore.create(tmp_path / "big.db")
    s.add_manual(manual(SHA_A, "big.pdf", "Big", ["x"]))
    texts = [" ".join(rng.choice(COMMON) if rng.random() < 0.3 else rng.choice(FILLER) for _ in range(30))
             for _ in range(1200)]
    texts[700] += " The status LED is on pin PA13 next to the SKR Mini E3 power jumper."
    texts[701] += " Error ERR_42 means the impeller is blocked."
    texts[702] += " The SKR board and the E3 fuse; a Mini cable."
    s.add_chunks([chunk(SHA_A, 1, i, t) for i, t in enumerate(texts)])
    s.commit()
    s.row_budget = 150
    yield s
    s.close()


def _full_bm25(s: ChunkStore, match: str) -> dict[int, float]:
    sql = ("SELECT rowid, bm25(chunks_fts, 0.5, 1.0) FROM chunks_fts WHERE chunks_fts MATCH ?")
    return {r: -sc for r, sc in s._db.execute(sql, (match,)).fetchall()}


def test_pruned_lexical_keeps_exact_tokens(big: ChunkStore) -> None:
    for query, row in [("what is PA13 on the printer board", 700), ("ERR_42 on the board firmware", 701),
                       ("SKR Mini E3 power jumper", 700), ("printer board firmware PA13 cable motor", 700)]:
        assert big.lexical(query, 5)[0][0] == row, query
    plan = big.lexical_plan(['"skr mini e3"', '"printer"', '"pa13"'], big.chunk_count())
    assert plan and '"printer"' not in plan[0][0]  # the common word is not OR-ed with the rare ones


def test_pruned_scores_equal_full_bm25_over_rows_with_a_rare_term(big: ChunkStore) -> None:
    big.rescore_terms = 99  # every common unit re-scored: the scores must be bm25 of the full question
    for query in ["SKR Mini E3 power jumper", "PA13 printer board", "impeller ERR_42 firmware cable motor"]:
        units = big.match_units(query)
        plan = big.lexical_plan(units, big.chunk_count())
        rare = plan[0][0]
        assert len(plan) == 1 and rare != " OR ".join(units)  # pruning did happen
        full = _full_bm25(big, " OR ".join(units))
        eligible = {r: sc for r, sc in full.items() if r in _full_bm25(big, rare)}
        expected = sorted(eligible.items(), key=lambda rs: (-rs[1], rs[0]))[:10]
        got = big.lexical(query, 10)
        assert [r for r, _ in got] == [r for r, _ in expected], query
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9)


def test_only_common_words_asks_for_their_co_occurrence(big: ChunkStore) -> None:
    got = big.lexical("printer board firmware", 20)
    texts = {r["row"]: r["text"].split() for r in big.get_rows([r for r, _ in got])}
    assert got and all({"printer", "board", "firmware"} <= set(texts[r]) for r, _ in got)
    assert big.lexical("printer", 5)  # one common word alone still finds rows
    assert big.lexical("zzzunknownword", 5) == []


def test_small_stores_and_small_scopes_are_not_pruned(big: ChunkStore) -> None:
    units = ['"pa13"', '"printer"']
    assert big.lexical_plan(units, 150) == [['"pa13" OR "printer"']]
    scoped = big.lexical("printer PA13", 500, [SHA_A])  # whole store in scope: pruned like unscoped
    assert scoped == big.lexical("printer PA13", 500)
    big.row_budget = 10_000
    assert len(big.lexical("printer PA13", 2000)) > 300  # unpruned: every row with "printer"


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise_when_pruned(big: ChunkStore, query: str) -> None:
    assert isinstance(big.lexical(query, 5), list)
    assert isinstance(big.lexical(query, 5, [SHA_A]), list)


def test_doc_freq_cache_follows_new_chunks_and_readonly_file_is_untouched(big: ChunkStore,
                                                                          tmp_path: Path) -> None:
    import hashlib

    assert big.lexical("zzzunknownword", 5) == []
    big.add_chunks([chunk(SHA_A, 1, 2000, "zzzunknownword appears now")])
    big.commit()
    assert big.lexical("zzzunknownword", 5) == [(1200, pytest.approx(big.lexical("zzzunknownword", 5)[0][1]))]
    big.close()
    digest = hashlib.sha256((tmp_path / "big.db").read_bytes()).hexdigest()
    ro = ChunkStore(tmp_path / "big.db", readonly=True)
    ro.row_budget = 150
    assert ro.lexical("PA13 printer board", 3)[0][0] == 700 and ro.lexical("printer board", 3)
    ro.close()
    assert hashlib.sha256((tmp_path / "big.db").read_bytes()).hexdigest() == digest
