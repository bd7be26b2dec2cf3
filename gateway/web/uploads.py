"""Receive a multipart/form-data upload straight onto disk, a chunk at a time.

Why not Litestar's form parsing: it keeps every part that has no file name in memory (a 190 MB
text field is held whole, then decoded) and turns a file part sent with `filename=""` into text,
so a binary PDF there is a UnicodeDecodeError and a 500. Here the body is read from
request.stream() and pushed through python-multipart's streaming parser: the file in field `data`
goes to data_dir/uploads/<random>/<clean name> through a buffer of at most ~1 MB, other parts are
dropped as they arrive, the byte cap is enforced while the bytes come in (413 at once, what was
written is deleted), and every malformed form is a 4xx in the one error shape, never a 500.
At most MAX_IN_FLIGHT uploads are received (and checked) at once; more are a 503 + Retry-After.
"""

from __future__ import annotations

import re
import secrets
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from litestar.concurrency import sync_to_thread
from litestar.exceptions import InternalServerException

from gateway.web.errors import ApiError
from gateway.web.security import AppRequest

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

FILE_FIELD = "data"
MAX_IN_FLIGHT = 2
RETRY_AFTER_S = 5
FLUSH_BYTES = 1024 * 1024
BODY_SLACK = 64 * 1024  # part headers, boundaries and small extra fields on top of the file cap
SAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._ -]+")


def safe_file_name(name: str | None) -> str:
    """The upload's base name with anything odd removed; never a path."""
    base = Path((name or "").replace("\\", "/")).name
    base = SAFE_NAME_RE.sub("_", base).strip(" .") or "manual"
    if not base.lower().endswith(".pdf"):
        base += ".pdf"
    return base[:150]


class UploadGate:
    """How many uploads this app is receiving; beyond `limit` the next one is refused. One per app
    (gateway.web.app.create_app puts it in the app state: `upload_gate(request)`)."""

    def __init__(self, limit: int = MAX_IN_FLIGHT) -> None:
        self.limit = limit
        self.active = 0
        self._lock = threading.Lock()

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._lock:
            if self.active >= self.limit:
                raise ApiError(503, "busy", f"{self.active} uploads are being received; retry later",
                               {"Retry-After": str(RETRY_AFTER_S), "Connection": "close"})
            self.active += 1
        try:
            yield
        finally:
            with self._lock:
                self.active -= 1


def upload_gate(request: AppRequest) -> UploadGate:
    """The upload gate of the app serving this request (its state's `uploads`)."""
    gate: UploadGate = request.app.state.uploads
    return gate


@dataclass
class SpooledUpload:
    """The file of field `data`, on disk in a folder of its own (the caller removes `folder`)."""

    folder: Path
    path: Path
    original_name: str
    size: int


@dataclass
class _Receiver:
    """python-multipart callbacks: the `data` part to a file, every other part dropped."""

    uploads_dir: Path
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    header_name: bytearray = field(default_factory=bytearray)
    header_value: bytearray = field(default_factory=bytearray)
    in_file: bool = False
    seen_file: bool = False
    file_done: bool = False
    original_name: str = ""
    folder: Path | None = None
    path: Path | None = None
    out: IO[bytes] | None = None
    pending: bytearray = field(default_factory=bytearray)
    size: int = 0
    problem: ApiError | None = None

    def callbacks(self) -> MultipartCallbacks:
        return {"on_part_begin": self._part_begin, "on_header_field": self._header_field,
                "on_header_value": self._header_value, "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished, "on_part_data": self._part_data,
                "on_part_end": self._part_end}

    def _part_begin(self) -> None:
        self.headers.clear()
        self.in_file = False

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_name += data[start:end]  # bounded by the parser's max_header_size

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def _header_end(self) -> None:
        self.headers.append((bytes(self.header_name).lower(), bytes(self.header_value)))
        self.header_name.clear()
        self.header_value.clear()

    def _headers_finished(self) -> None:
        from python_multipart.multipart import parse_options_header

        disposition = next((v for k, v in self.headers if k == b"content-disposition"), b"")
        params = parse_options_header(disposition)[1]
        if params.get(b"name") != FILE_FIELD.encode() or self.seen_file:
            return
        self.seen_file = True
        if b"filename" not in params:
            self.problem = ApiError(400, "invalid_request", f"field {FILE_FIELD} is not a file (no filename in "
                                    f"its Content-Disposition); send the PDF as a file: -F {FILE_FIELD}=@manual.pdf")
            return
        self.original_name = params[b"filename"].decode("utf-8", errors="replace")
        if not self.original_name.strip():
            self.problem = ApiError(400, "invalid_request", f"the file in field {FILE_FIELD} has an empty file "
                                    f"name; send it with its name: -F {FILE_FIELD}=@manual.pdf")
            return
        self.folder = self.uploads_dir / secrets.token_hex(8)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / safe_file_name(self.original_name)
        self.out = self.path.open("wb")
        self.in_file = True

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self.in_file:
            self.pending += data[start:end]
            self.size += end - start

    def _part_end(self) -> None:
        if self.in_file:
            self.in_file = False
            self.file_done = True

    async def flush(self, force: bool = False) -> None:
        if self.out is not None and self.pending and (force or len(self.pending) >= FLUSH_BYTES):
            chunk, self.pending = self.pending, bytearray()
            await sync_to_thread(self.out.write, chunk)

    def discard(self) -> None:
        if self.out is not None:
            self.out.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def _boundary(content_type: str) -> bytes:
    from python_multipart.multipart import parse_options_header

    kind, params = parse_options_header(content_type)
    if kind != b"multipart/form-data":
        raise ApiError(415, "unsupported_media_type", f"send the PDF as multipart/form-data with the file in "
                       f"field {FILE_FIELD}, not {kind.decode('latin-1') or 'no content type'}")
    boundary = params.get(b"boundary", b"")
    if not boundary or len(boundary) > 70:
        raise ApiError(400, "invalid_request", "multipart/form-data needs a boundary of 1-70 characters "
                       "in its Content-Type")
    return boundary


async def receive_upload(request: AppRequest, uploads_dir: Path, max_mb: int) -> SpooledUpload:
    """Stream the request's multipart body; the file of field `data` ends up on disk, or ApiError.

    An error answered before the whole body was read says `Connection: close`, so that the server
    does not go on reading (and dropping) the rest of a body it has refused.
    """
    from python_multipart.exceptions import FormParserError
    from python_multipart.multipart import MultipartParser

    too_large = ApiError(413, "payload_too_large", f"upload exceeds {max_mb} MB")
    cap = max_mb * 1024 * 1024
    receiver = _Receiver(uploads_dir)
    received, finished = 0, False
    try:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > cap + BODY_SLACK:
            raise too_large
        parser = MultipartParser(_boundary(request.headers.get("content-type", "")), receiver.callbacks())
        try:
            async for chunk in request.stream():
                received += len(chunk)
                if received > cap + BODY_SLACK:
                    raise too_large
                parser.write(chunk)
                if receiver.problem is not None:
                    raise receiver.problem
                if receiver.size > cap:
                    raise too_large
                await receiver.flush()
        except FormParserError as exc:
            raise ApiError(400, "invalid_request", f"malformed multipart/form-data: {exc}") from None
        except InternalServerException as exc:  # the client went away mid-body
            raise ApiError(400, "invalid_request", f"upload interrupted: {exc.detail}") from None
        finished = True
        await receiver.flush(force=True)
        if receiver.out is not None:
            receiver.out.close()
        if not receiver.seen_file:
            raise ApiError(400, "invalid_request", f"no file in field {FILE_FIELD} (multipart/form-data, "
                           f"-F {FILE_FIELD}=@manual.pdf)")
        if not receiver.file_done or receiver.folder is None or receiver.path is None:
            raise ApiError(400, "invalid_request", f"the body ended before the end of the file in field "
                           f"{FILE_FIELD} (truncated multipart/form-data)")
        if receiver.size == 0:
            raise ApiError(400, "invalid_request", f"the file {receiver.original_name} in field {FILE_FIELD} "
                           "is empty (0 bytes)")
    except BaseException as exc:
        receiver.discard()
        if isinstance(exc, ApiError) and not finished:
            exc.headers.setdefault("Connection", "close")
        raise
    return SpooledUpload(folder=receiver.folder, path=receiver.path, original_name=receiver.original_name,
                         size=receiver.size)
