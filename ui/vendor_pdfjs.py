"""Vendor pdf.js for the page viewer at build time: a pinned pdfjs-dist tarball from the npm registry,
checked against its npm `dist.integrity` before anything is extracted.

Why: phone browsers ignore `#page=N` on a PDF, so the technician page opens cited pages in its own
viewer (/viewer, ui/static/viewer.js), which needs pdf.js. The appliance has no network at run time
and must not use a CDN, so the files are fetched here, once, by `make vendor` (which `make install`,
`make run`, `make test` and `make bundle` run first), into ui/static/vendor/pdfjs/ (git-ignored;
the wheel's package data carries them into the air-gapped bundle). Standard library only, so it
runs before the virtual environment exists.

What is kept: the legacy build (it runs on tablets' older browsers: the modern build targets only
the latest ones) of pdf.min.mjs and pdf.worker.min.mjs, the WebAssembly image decoders that build
loads at run time (JBIG2 and CCITT fax: scanned manuals; JPEG 2000; colour profiles) with their
pure-JS fallbacks, the predefined CMaps (cmaps/: CJK and other CID-keyed fonts that are not
embedded) and the standard fonts' data (standard_fonts/: Foxit and Liberation, with their licences),
and the licences (pdf.js: Apache-2.0; the decoders: BSD / MIT, in wasm/).

Usage: python ui/vendor_pdfjs.py [--dest DIR] [--tarball FILE] [--force]
Exit status 0 when the pinned version is in place (already, or now), 1 when it could not be.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import re
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VERSION = "6.5.438"
TARBALL_URL = f"https://registry.npmjs.org/pdfjs-dist/-/pdfjs-dist-{VERSION}.tgz"
# npm's dist.integrity for pdfjs-dist@6.5.438 (Subresource Integrity form: algorithm-base64 digest).
INTEGRITY = "sha512-vg8Pw1x+AFKy4AMDvhuWl5cOYV8d698UoEANoFFhc79hqXDnZQqnOXoxw3HG907WHOg1JYOvLhP756boddFxpA=="
DEST = Path(__file__).resolve().parent / "static" / "vendor" / "pdfjs"
STAMP = "VERSION"  # written last; its content says which tarball the files came from
TIMEOUT_S = 60
MAX_TARBALL_BYTES = 64 * 1024 * 1024  # the real one is ~9 MB; a runaway response is refused

# member of the tarball -> path under DEST
FILES: dict[str, str] = {
    "package/LICENSE": "LICENSE",
    "package/legacy/build/pdf.min.mjs": "pdf.min.mjs",
    "package/legacy/build/pdf.worker.min.mjs": "pdf.worker.min.mjs",
    "package/wasm/jbig2.wasm": "wasm/jbig2.wasm",
    "package/wasm/jbig2_nowasm_fallback.js": "wasm/jbig2_nowasm_fallback.js",
    "package/wasm/openjpeg.wasm": "wasm/openjpeg.wasm",
    "package/wasm/openjpeg_nowasm_fallback.js": "wasm/openjpeg_nowasm_fallback.js",
    "package/wasm/qcms_bg.wasm": "wasm/qcms_bg.wasm",
    "package/wasm/LICENSE_JBIG2": "wasm/LICENSE_JBIG2",
    "package/wasm/LICENSE_PDFJS_JBIG2": "wasm/LICENSE_PDFJS_JBIG2",
    "package/wasm/LICENSE_OPENJPEG": "wasm/LICENSE_OPENJPEG",
    "package/wasm/LICENSE_PDFJS_OPENJPEG": "wasm/LICENSE_PDFJS_OPENJPEG",
    "package/wasm/LICENSE_QCMS": "wasm/LICENSE_QCMS",
    "package/wasm/LICENSE_PDFJS_QCMS": "wasm/LICENSE_PDFJS_QCMS",
}

# folders of the tarball kept whole -> folder under DEST. cmaps: the predefined CMaps that CID-keyed
# fonts name instead of embedding (CJK manuals); standard_fonts: the 14 standard fonts' data for a
# PDF that names Helvetica or Times without embedding it. Both are fetched only when a page needs them.
DIRS: dict[str, str] = {"package/cmaps/": "cmaps", "package/standard_fonts/": "standard_fonts"}
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # flat folders of plain file names


class VendorError(Exception):
    """The pinned pdf.js could not be put in place (download, integrity or contents)."""


def stamp_text(version: str = VERSION, integrity: str = INTEGRITY) -> str:
    return f"pdfjs-dist {version} legacy\n{integrity}\n"


def is_current(dest: Path = DEST) -> bool:
    """True when dest holds every file of the pinned version (so `make vendor` can skip)."""
    stamp = dest / STAMP
    if not stamp.is_file() or stamp.read_text(encoding="utf-8") != stamp_text():
        return False
    return (all((dest / name).is_file() for name in FILES.values())
            and all((dest / folder).is_dir() and any((dest / folder).iterdir()) for folder in DIRS.values()))


def check_integrity(data: bytes, integrity: str = INTEGRITY) -> None:
    """Refuse bytes whose digest differs from the SRI string npm publishes (e.g. "sha512-...")."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm not in ("sha256", "sha384", "sha512") or not expected:
        raise VendorError(f"unsupported integrity string {integrity!r}")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode("ascii")
    if actual != expected:
        raise VendorError(f"integrity check failed: the tarball's {algorithm} is {actual}, expected {expected} "
                          "(a changed or corrupted download; nothing was extracted)")


def download(url: str = TARBALL_URL, timeout_s: float = TIMEOUT_S) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "manualqa-vendor-pdfjs"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            data = response.read(MAX_TARBALL_BYTES + 1)
    except OSError as exc:  # URLError, timeouts, refused connections
        raise VendorError(f"could not download {url}: {exc}") from exc
    if len(data) > MAX_TARBALL_BYTES:
        raise VendorError(f"{url} is larger than {MAX_TARBALL_BYTES} bytes")
    return data


def extract(data: bytes, dest: Path = DEST, integrity: str = INTEGRITY) -> None:
    """Check the tarball, then write the kept files into a new folder beside dest and swap it in.

    The integrity check comes first: a tampered tarball is never opened. The swap means a failed or
    interrupted run leaves either the old folder or none, never a half-written one that looks whole.
    """
    check_integrity(data, integrity)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".pdfjs-", dir=dest.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member_name, target in FILES.items():
                try:
                    member = tar.getmember(member_name)
                except KeyError:
                    raise VendorError(f"the tarball has no {member_name}") from None
                source = tar.extractfile(member) if member.isfile() else None
                if source is None:
                    raise VendorError(f"{member_name} in the tarball is not a regular file")
                path = staging / target  # names come from FILES, never from the archive
                path.parent.mkdir(parents=True, exist_ok=True)
                with source, open(path, "wb") as out:
                    shutil.copyfileobj(source, out)
            _extract_dirs(tar, staging)
        (staging / STAMP).write_text(stamp_text(VERSION, integrity), encoding="utf-8")
        for path in [staging, *staging.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)  # mkdtemp makes it 0700
        old = dest.with_name(f".{dest.name}-old-{os.getpid()}") if dest.exists() else None
        if old is not None:
            dest.rename(old)
        try:
            staging.rename(dest)
        except OSError:
            if old is not None:
                old.rename(dest)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _extract_dirs(tar: tarfile.TarFile, staging: Path) -> None:
    """Every file under DIRS' folders; a nested folder, an odd name or a link there is refused."""
    counts = dict.fromkeys(DIRS, 0)
    for member in tar.getmembers():
        prefix = next((p for p in DIRS if member.name.startswith(p)), None)
        rest = member.name[len(prefix):] if prefix else ""
        if prefix is None or (not rest and member.isdir()):
            continue
        source = tar.extractfile(member) if member.isfile() else None
        if not _SAFE_NAME.match(rest) or source is None:
            raise VendorError(f"unexpected member {member.name!r} in the tarball (not a plain file of {prefix})")
        path = staging / DIRS[prefix] / rest
        path.parent.mkdir(parents=True, exist_ok=True)
        with source, open(path, "wb") as out:
            shutil.copyfileobj(source, out)
        counts[prefix] += 1
    for prefix, count in counts.items():
        if not count:
            raise VendorError(f"the tarball has no files under {prefix}")


def vendor(dest: Path = DEST, tarball: Path | None = None, force: bool = False) -> str:
    """Put the pinned pdf.js into dest; returns what happened, in words."""
    if not force and is_current(dest):
        return f"pdf.js {VERSION} already in {dest}"
    data = tarball.read_bytes() if tarball is not None else download()
    extract(data, dest)
    return f"pdf.js {VERSION} (legacy build, integrity checked) -> {dest}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEST, help=f"target folder (default {DEST})")
    parser.add_argument("--tarball", type=Path, help="a pdfjs-dist tarball already downloaded (still checked)")
    parser.add_argument("--force", action="store_true", help="download and extract even when up to date")
    args = parser.parse_args(argv)
    try:
        print(vendor(args.dest, args.tarball, args.force))
    except (VendorError, OSError, tarfile.TarError) as exc:
        print(f"warning: pdf.js {VERSION} was not vendored: {exc}\n"
              "warning: the page viewer will open PDFs at #page=N instead (most phones then show page 1); "
              "run `make vendor` on a machine that reaches registry.npmjs.org", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
