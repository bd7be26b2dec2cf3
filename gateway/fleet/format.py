"""The index archive's format: member names, limits and the one JSON spelling that gets signed.

Shared by export (gateway.fleet.export) and import (gateway.fleet.reading, gateway.fleet.archive);
the layout itself is described in gateway.fleet.archive.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from retrieval.manifest import CHUNKS_DB, MANIFEST, VECTORS

FORMAT = "manualqa-index-archive"
FORMAT_VERSION = 1
MANIFEST_NAME = "MANIFEST.json"
SIGNATURE_NAME = "MANIFEST.sig"
SIGNATURE_BYTES = 64  # Ed25519
DEFAULT_MAX_BYTES = 4 << 30  # payload cap on import; the CLI's --max-size raises it
MAX_MANIFEST_BYTES = 4 << 20  # MANIFEST.json and the version's manifest.json are held in memory
MAX_READ = 8 << 20  # no single read from the tar stream is larger (tar pax/GNU header bombs)
STREAM_SLACK = 64 << 20  # headers and the manifest on top of the payload cap
BLOCK = 1 << 20
VERSION_FILES = (MANIFEST, CHUNKS_DB, VECTORS)
VERSION_RE = re.compile(r"^v\d{8}T\d{6}-[0-9a-f]{6}$")  # as retrieval.versions names them
MANUAL_RE = re.compile(r"^payload/manuals/([0-9a-f]{64})\.pdf$")
SHA_RE = re.compile(r"^[0-9a-f]{64}$")
OTHER_COMPRESSION = {b"BZh": "bzip2", b"\xfd7zXZ": "xz", b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip"}


def manifest_json(data: Mapping[str, object]) -> bytes:
    """MANIFEST.json's exact bytes: what is signed is what is written."""
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
