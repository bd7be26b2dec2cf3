"""docs/benchmarks.md is assembled from docs/bench/*.md: an edit made only in the assembled file is
lost the next time a bench script rewrites its section and the file is assembled again."""

from __future__ import annotations

import difflib
from pathlib import Path

from bench.run_all import OUT, assemble


def test_benchmarks_md_is_exactly_what_its_sections_assemble_to(tmp_path: Path) -> None:
    rebuilt = assemble(tmp_path / "benchmarks.md").read_text(encoding="utf-8")
    committed = OUT.read_text(encoding="utf-8")
    diff = list(difflib.unified_diff(committed.splitlines(), rebuilt.splitlines(), "docs/benchmarks.md",
                                     "assembled from docs/bench", lineterm="", n=0))
    assert not diff, ("edit docs/bench/<section>.md, then `python -m bench.run_all --assemble`:\n"
                      + "\n".join(diff[:12]))
