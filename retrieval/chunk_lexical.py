"""Full-text search of a version's chunks: BM25 over the FTS5 table, bounded on large stores (only rows
with the question's rarer terms are scored), and the document frequencies behind it. A mixin of
retrieval.chunkstore.ChunkStore.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ingest.text.terms import has_cjk, term_variants
from retrieval.fts import match_units
from retrieval.types import RetrievalError

# bm25 column weights (heading, text). Headings repeat over every chunk of a section, so they are
# worth a little less than the passage itself.
BM25_WEIGHTS = (0.5, 1.0)

# FTS5 computes bm25 for every row that matches any OR-ed term before it sorts (~1.5 µs a row), so a
# question made of words found in tens of thousands of chunks costs tens of milliseconds. Only rows
# with one of the question's rarer terms are scored: terms are taken rarest first while the rows
# they match add up to at most LEXICAL_ROW_BUDGET. The next RESCORE_TERMS terms still count in the
# score of those rows (each costs a pass over its doclist); the rest, found in a large share of the
# chunks, have a small IDF. See docs/bench/search_latency.md for the cost/quality trade-off.
LEXICAL_ROW_BUDGET = 5_000
RESCORE_TERMS = 3
_DF_CACHE_MAX = 50_000


class LexicalSearch:
    """ChunkStore's lexical search; ChunkStore provides what is declared here."""

    if TYPE_CHECKING:
        readonly: bool
        analysed: bool
        row_budget: int
        rescore_terms: int
        _df: dict[tuple[str, int], int]
        _rows: int | None

        def _query(self, sql: str, params: Iterable[object] = ()) -> list[tuple[Any, ...]]: ...

        def languages(self) -> list[str]: ...

    def _scope_filter(self, shas: list[str]) -> tuple[str | None, list[object], int]:
        """A rowid filter for FTS5 that never becomes one full-text query per allowed row.

        ``rowid IN (subquery)`` makes SQLite run the MATCH once per listed rowid (seconds at 100k
        chunks). Manuals are stored as contiguous row ranges, so one range goes to FTS5 as a rowid
        range it can seek; several ranges, or rows that are not contiguous, are applied as a plain
        filter (the leading ``+`` keeps SQLite from handing the constraint to FTS5). The third value
        is the number of rows in scope.
        """
        if not shas:
            return None, [], 0
        marks = ",".join("?" * len(shas))
        ranges = self._query(
            f"SELECT MIN(row), MAX(row), COUNT(*) FROM chunks WHERE manual_sha256 IN ({marks})"
            " GROUP BY manual_sha256 ORDER BY 1", shas)
        if not ranges:
            return None, [], 0
        total = sum(count for _lo, _hi, count in ranges)
        if any(hi - lo + 1 != count for lo, hi, count in ranges):
            return (f" AND +rowid IN (SELECT row FROM chunks WHERE manual_sha256 IN ({marks}))", list(shas),
                    total)
        if len(ranges) == 1:
            return " AND rowid BETWEEN ? AND ?", [ranges[0][0], ranges[0][1]], total
        return (" AND (" + " OR ".join("+rowid BETWEEN ? AND ?" for _ in ranges) + ")",
                [v for lo, hi, _count in ranges for v in (lo, hi)], total)

    def _row_total(self) -> int:
        if self._rows is not None:
            return self._rows
        total = int(self._query("SELECT COALESCE(MAX(row) + 1, 0) FROM chunks")[0][0])  # rows are 0..n-1
        if self.readonly:
            self._rows = total
        return total

    def _doc_freqs(self, units: list[str], cap: int) -> dict[str, int]:
        """Rows matching each unit over the whole store, counted up to ``cap`` (bounded cost), cached.

        Counting through FTS5 itself stems and tokenises exactly as the index did, and needs no
        extra table, so versions written before this existed work unchanged (and stay read-only).
        """
        out: dict[str, int] = {}
        for unit in units:
            key = (unit, cap)
            if key not in self._df:
                if len(self._df) >= _DF_CACHE_MAX:
                    self._df.clear()
                self._df[key] = self._query(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
                    (unit, cap))[0][0]
            out[unit] = self._df[key]
        return out

    def term_doc_freqs(self, words: list[str]) -> dict[str, int]:
        """Rows holding each word (letters and digits only, as retrieval.fts.tokens gives them),
        stemmed as the index stems; for retrieval.term_coverage's weights."""
        total = self._row_total()
        units = {w: self._term_unit(w) for w in words if w.isalnum()}
        counts = self._doc_freqs(list(dict.fromkeys(units.values())), max(1, total))
        return {w: counts.get(units[w], 0) if w in units else 0 for w in words}

    def _term_unit(self, word: str) -> str:
        """The MATCH unit that finds `word`: as typed where SQLite stems (old versions); in an analysed
        version a CJK pair as it is, a word as each of the index's languages stems it."""
        if not self.analysed or has_cjk(word):
            return f'"{word}"'
        return " OR ".join(f'"{v}"' for v in term_variants(word, self.languages() or ["en"]))

    def row_total(self) -> int:
        return self._row_total()

    def manuals_holding(self, word: str) -> frozenset[str]:
        """The sha256s of the manuals with a passage holding `word` (as search finds it: stemmed,
        folded); a CJK run longer than a pair is looked up by its first pair."""
        if not word.isalnum():
            return frozenset()
        unit = self._term_unit(word[:2] if has_cjk(word) else word)
        return frozenset(r[0] for r in self._query(
            "SELECT DISTINCT c.manual_sha256 FROM chunks_fts JOIN chunks c ON c.row = chunks_fts.rowid"
            " WHERE chunks_fts MATCH ?", (unit,)))

    def lexical_plan(self, units: list[str], searchable: int) -> list[list[str]]:
        """Groups of MATCH expressions to try in turn; the first group that finds rows is used.

        Within a group, each row keeps its best score. Up to ``row_budget`` searchable rows the one
        expression OR-s every unit. Beyond, the "rare" units are taken rarest first while the rows
        they match add up to at most the budget (the rarest always: the question's most specific
        part number, pin name or board-name phrase is never dropped), and the next
        ``rescore_terms`` are "common". Only rows with a rare unit are scored, by bm25 over rare +
        common units: ``rare`` scores rows without a common unit exactly, ``(rare) AND (common)``
        scores the others exactly (bm25 sums over every phrase of the expression, and a phrase's
        IDF does not depend on the others), so the best of the two per row is the score of
        ``rare OR common`` without FTS5 scoring the rows that match common units alone. Units
        beyond those are left out. When even the rarest unit is in more rows than the budget, every
        word of the question is common here and only their co-occurrence is informative: the units
        are AND-ed, and the most frequent one is let go until some row matches.
        """
        if not units:
            return []
        if searchable <= self.row_budget:
            return [[" OR ".join(units)]]
        df = self._doc_freqs(units, self.row_budget + 1)
        present = sorted((u for u in units if df[u]), key=lambda u: df[u])  # stable: phrases first
        if not present:
            return []
        if df[present[0]] > self.row_budget:
            return [[" AND ".join(present[:i])] for i in range(len(present), 0, -1)]
        rare: list[str] = []
        total = 0
        for unit in present:
            if rare and total + df[unit] > self.row_budget:
                break
            rare.append(unit)
            total += df[unit]
        common = present[len(rare):len(rare) + self.rescore_terms]
        rare_or = " OR ".join(rare)
        if not common:
            return [[rare_or]]
        return [[rare_or, f"({rare_or}) AND ({' OR '.join(common)})"]]

    def match_units(self, query: str) -> list[str]:
        """The question's MATCH units as this version's index holds its terms (retrieval.fts)."""
        return match_units(query, (self.languages() or ["en"]) if self.analysed else None)

    def lexical(self, query: str, n: int, manual_shas: list[str] | None = None) -> list[tuple[int, float]]:
        """BM25 over heading+text: (row, score) best first; score is positive, higher is better.

        On large stores the words found in a large share of the chunks are left out of the query
        (see :meth:`lexical_plan`), which bounds the rows FTS5 has to score.
        """
        units = self.match_units(query)
        if not units or n <= 0:
            return []
        scope_sql = ""
        scope_params: list[object] = []
        if manual_shas is not None:
            scope, scope_params, searchable = self._scope_filter(list(manual_shas))
            if scope is None:
                return []
            scope_sql = scope
        else:
            searchable = self._row_total()
        sql = (f"SELECT rowid, bm25(chunks_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]}) AS s"
               f" FROM chunks_fts WHERE chunks_fts MATCH ?{scope_sql} ORDER BY s LIMIT ?")
        try:
            for group in self.lexical_plan(units, searchable):
                best: dict[int, float] = {}
                for match in group:
                    for r, s in self._query(sql, [match, *scope_params, int(n)]):
                        best[int(r)] = max(best.get(int(r), -float("inf")), -float(s))
                if best:
                    return sorted(best.items(), key=lambda rs: (-rs[1], rs[0]))[:n]
        except sqlite3.OperationalError as exc:  # match_units makes this a bug, not user error
            raise RetrievalError(f"full-text search failed for {query!r}: {exc}") from exc
        return []
