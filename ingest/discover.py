"""Turn the paths a user names (files and folders) into the list of PDFs to ingest."""

from __future__ import annotations

import hashlib
from pathlib import Path

_READ_BLOCK = 1 << 20


def find_pdfs(paths: list[str | Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Expand files and folders into PDF paths, plus the paths that could not be used and why.

    Folders are searched recursively for ``*.pdf`` (any letter case). A file named explicitly is kept
    even without a .pdf suffix: the user asked for it, and the parser will say clearly if it is not a
    PDF. The result is sorted and free of duplicates (the same file reached twice counts once).
    """
    found: dict[Path, Path] = {}  # resolved path -> path as the user will see it
    problems: list[tuple[Path, str]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            problems.append((path, f"{path}: no such file or folder"))
        elif path.is_dir():
            try:
                candidates = [p for p in path.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()]
            except OSError as exc:
                problems.append((path, f"{path}: cannot list folder ({exc.strerror or exc})"))
                continue
            for candidate in candidates:
                found.setdefault(candidate.resolve(), candidate)
        elif path.is_file():
            found.setdefault(path.resolve(), path)
        else:
            problems.append((path, f"{path}: not a regular file or folder"))
    return sorted(found.values()), problems


def sha256_file(path: str | Path) -> str:
    """Content hash of a file, read in blocks so large manuals do not sit in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()
