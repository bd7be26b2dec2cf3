"""The tar layer of an index archive read as hostile input: plain tar or gzip only, every read and
seek capped, a member refused by its header (absolute path, "..", control characters, links,
devices) before its data is read.
"""

from __future__ import annotations

import gzip
import os
import re
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from gateway.fleet import FleetError
from gateway.fleet.format import MAX_READ, OTHER_COMPRESSION


class Overrun(Exception):
    """The tar stream asked for more than the caps allow (raised inside tarfile, turned into FleetError)."""


class _Capped:
    """The (decompressed) tar stream, refusing any read or seek past `limit` and any huge single read."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw = raw
        self._limit = limit

    def tell(self) -> int:
        return self._raw.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == 0 else self._raw.tell() + offset if whence == 1 else None
        if target is None or target > self._limit:
            raise Overrun(f"the tar stream runs past {self._limit} bytes")
        return self._raw.seek(target)

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0 or n > MAX_READ:
            raise Overrun(f"a header asks for a {n}-byte read (more than {MAX_READ})")
        if self._raw.tell() + n > self._limit:
            raise Overrun(f"the tar stream runs past {self._limit} bytes")
        return self._raw.read(n)


@contextmanager
def opened(path: Path, limit: int) -> Iterator[tarfile.TarFile]:
    """The archive as a TarFile over a capped stream; only plain tar and gzip are accepted."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise FleetError(f"cannot read archive {path}: {exc.strerror or exc}") from exc
    with fh:
        head = fh.read(8)
        fh.seek(0)
        for magic, kind in OTHER_COMPRESSION.items():
            if head.startswith(magic):
                raise FleetError(f"{path.name} is a {kind} file; an index archive is a plain tar or a tar.gz")
        size = os.fstat(fh.fileno()).st_size
        gzipped = head.startswith(b"\x1f\x8b")
        if not gzipped and size > limit:
            raise FleetError(f"{path.name} is {size} bytes, over this gateway's import cap of {limit} bytes "
                             "(raise it with --max-size if this is expected)")
        stream: IO[bytes] = gzip.GzipFile(fileobj=fh, mode="rb") if gzipped else fh  # type: ignore[assignment]
        try:
            try:
                tf = tarfile.open(fileobj=_Capped(stream, limit), mode="r:")  # type: ignore[call-overload]
            except Overrun as exc:
                raise FleetError(f"{path.name}: refused before reading further: {exc} (a tar/zip bomb?)") from exc
            except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise FleetError(f"{path.name} is not a manualqa index archive (a tar or tar.gz file): "
                                 f"{exc}") from exc
            with tf:
                yield tf
        finally:
            if gzipped:
                stream.close()


def _kind(m: tarfile.TarInfo) -> str:
    for test, kind in ((m.issym, "a symbolic link"), (m.islnk, "a hard link"), (m.isdir, "a directory"),
                       (m.ischr, "a character device"), (m.isblk, "a block device"), (m.isfifo, "a FIFO")):
        if test():
            return kind
    return f"of tar type {m.type!r}"


def check_header(m: tarfile.TarInfo) -> None:
    """Refuse a member by its header alone: before its data is read, and long before anything is written."""
    name = m.name
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise FleetError(f"archive member {name!r} has an absolute path; refusing the archive")
    if ".." in re.split(r"[/\\]", name):
        raise FleetError(f"archive member {name!r} contains '..' (path traversal); refusing the archive")
    if any(ord(c) < 32 for c in name):
        raise FleetError(f"archive member {name!r} has control characters in its name; refusing the archive")
    if not m.isreg():
        raise FleetError(f"archive member {name!r} is {_kind(m)}; an index archive holds regular files only")


def read_exact(tf: tarfile.TarFile, m: tarfile.TarInfo) -> bytes:
    fh = tf.extractfile(m)
    assert fh is not None  # a regular file (checked)
    data = fh.read(m.size)
    if len(data) != m.size:
        raise tarfile.ReadError("unexpected end of data")
    return data
