"""Check the training corpus in train/corpus/ against its README and against every evaluation manual.

    python train/check_corpus.py            # exit status 1 and a list of problems if anything is off

Offline and fast (hashes ~30 files, counts pages without extracting text). Checks that:

- every manual listed in train/corpus/README.md (a "### <file>.pdf" record) exists in the corpus
  folder with the recorded sha256 and page count, and the folder holds no other PDF;
- no sha256 is one of ../shared/reserved_manuals.txt (manuals kept for independent evaluation),
  nor equal to any PDF in eval/dev/manuals, eval/test/manuals or sample_manuals/;
- no file name is shared with an eval or sample manual, and the corpus stays under 80 MB.

It prints the count of manuals, the number of repositories, the total pages and the total size.

The PDFs are not in this repository: files brought in from other repositories are data that only the
steering side keeps, under shared/. The folder is $MANUALQA_TRAIN_CORPUS, else ../shared/train_corpus
beside the checkout, else train/corpus/manuals (git-ignored). Without any of them the README's
records alone are checked (their sha256s against the reserved list, eval/ and sample_manuals/).
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "train" / "corpus"
LOCAL_MANUALS = CORPUS / "manuals"  # git-ignored: a local copy for training runs
README = CORPUS / "README.md"
EVAL_DIRS = (ROOT / "eval" / "dev" / "manuals", ROOT / "eval" / "test" / "manuals", ROOT / "sample_manuals")
# Beside the checkout (../shared); absent in a clone that has no shared folder next to it.
RESERVED = ROOT.parent / "shared" / "reserved_manuals.txt"
MAX_BYTES = 80_000_000



def corpus_dir() -> Path | None:
    """Where the corpus PDFs are, or None when they are not on this machine."""
    import os

    for candidate in (os.environ.get("MANUALQA_TRAIN_CORPUS"), ROOT.parent / "shared" / "train_corpus", LOCAL_MANUALS):
        if candidate and Path(candidate).is_dir() and any(Path(candidate).glob("*.pdf")):
            return Path(candidate)
    return None


MANUALS = corpus_dir()

_HEADING = re.compile(r"^### (\S+\.pdf)\s*$")
_ROW = re.compile(r"^\| (source|sha256|pages|licence|licence evidence) \| (.*) \|\s*$")
_SHA = re.compile(r"`([0-9a-f]{64})`")
_REPO = re.compile(r"^`([\w.-]+/[\w.-]+)` @ `([0-9a-f]{40})`")


@dataclass
class Record:
    file: str
    repo: str = ""
    commit: str = ""
    sha256: str = ""
    pages: int = 0
    licence: str = ""
    evidence: str = ""


@dataclass
class Report:
    records: list[Record]
    problems: list[str]
    total_pages: int
    total_bytes: int
    reserved_checked: bool
    files_present: bool = True

    @property
    def repos(self) -> set[str]:
        return {r.repo for r in self.records}


def parse_readme(text: str) -> list[Record]:
    records: list[Record] = []
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            records.append(Record(file=heading.group(1)))
            continue
        row = _ROW.match(line)
        if not row or not records:
            continue
        key, value = row.groups()
        rec = records[-1]
        if key == "source":
            m = _REPO.match(value)
            if m:
                rec.repo, rec.commit = m.groups()
        elif key == "sha256":
            m = _SHA.search(value)
            rec.sha256 = m.group(1) if m else ""
        elif key == "pages":
            m = re.match(r"(\d+)", value)
            rec.pages = int(m.group(1)) if m else 0
        elif key == "licence":
            rec.licence = value.strip()
        else:
            rec.evidence = value.strip()
    return records


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def reserved_sha256s(path: Path = RESERVED) -> set[str] | None:
    if not path.is_file():
        return None
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return {line.lower() for line in lines if re.fullmatch(r"[0-9a-fA-F]{64}", line)}


def page_count(path: Path) -> int | None:
    try:
        from pypdf import PdfReader
    except ImportError:  # the check still runs without the project's venv, less the page counts
        return None
    return len(PdfReader(str(path)).pages)


def check(reserved_path: Path = RESERVED, count_pages: bool = True, manuals: Path | None = MANUALS) -> Report:
    problems: list[str] = []
    if not README.is_file():
        return Report([], [f"{README} is missing"], 0, 0, False)
    records = parse_readme(README.read_text(encoding="utf-8"))
    if not records:
        problems.append("README lists no manual")

    eval_sha: dict[str, str] = {}
    eval_names: set[str] = set()
    for folder in EVAL_DIRS:
        for pdf in sorted(folder.glob("*.pdf")):
            eval_sha[sha256_of(pdf)] = str(pdf.relative_to(ROOT))
            eval_names.add(pdf.name)
    reserved = reserved_sha256s(reserved_path)

    listed = [r.file for r in records]
    for name in sorted({n for n in listed if listed.count(n) > 1}):
        problems.append(f"{name}: listed more than once")
    on_disk = {p.name for p in manuals.glob("*.pdf")} if manuals is not None else set()
    for name in sorted(on_disk - set(listed)):
        problems.append(f"{name}: in {manuals} but not in the README")

    seen_sha: dict[str, str] = {}
    total_pages = total_bytes = 0
    for rec in records:
        path = manuals / rec.file if manuals is not None else None
        for field in ("repo", "commit", "sha256", "licence", "evidence"):
            if not getattr(rec, field):
                problems.append(f"{rec.file}: README record has no {field}")
        if rec.pages <= 0:
            problems.append(f"{rec.file}: README record has no page count")
        if rec.file in eval_names:
            problems.append(f"{rec.file}: same file name as an eval/sample manual")
        total_pages += rec.pages
        if path is None:  # records only: the recorded sha256 stands for the file
            digest = rec.sha256
        elif not path.is_file():
            problems.append(f"{rec.file}: missing from {manuals}")
            continue
        else:
            digest = sha256_of(path)
            total_bytes += path.stat().st_size
        if digest != rec.sha256:
            problems.append(f"{rec.file}: sha256 {digest} != README {rec.sha256}")
        if digest in eval_sha:
            problems.append(f"{rec.file}: identical to {eval_sha[digest]}")
        if reserved is not None and digest in reserved:
            problems.append(f"{rec.file}: sha256 is in {reserved_path.name} (kept for independent evaluation)")
        if digest in seen_sha:
            problems.append(f"{rec.file}: same bytes as {seen_sha[digest]}")
        seen_sha[digest] = rec.file
        if count_pages and path is not None:
            n = page_count(path)
            if n is not None and n != rec.pages:
                problems.append(f"{rec.file}: {n} pages, README says {rec.pages}")
    if total_bytes > MAX_BYTES:
        problems.append(f"corpus is {total_bytes / 1e6:.1f} MB, over {MAX_BYTES / 1e6:.0f} MB")
    return Report(records, problems, total_pages, total_bytes, reserved is not None, manuals is not None)


def main() -> int:
    report = check()
    print(
        f"{len(report.records)} manuals from {len(report.repos)} repositories, "
        f"{report.total_pages} pages, {report.total_bytes / 1e6:.1f} MB"
    )
    if not report.files_present:
        print("corpus PDFs: not on this machine (set MANUALQA_TRAIN_CORPUS); the README's records were checked")
    if report.reserved_checked:
        print(f"reserved list: {RESERVED} checked")
    else:
        print(f"reserved list: {RESERVED} not found, checked against eval/ and sample_manuals/ only")
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    print("OK" if not report.problems else f"{len(report.problems)} problem(s)")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
