"""Signed index archives over HTTP (issue 12): export a version, import one as an inactive version.

The same library functions as `manualqa index export` / `index import` (gateway.fleet.archive),
with the same checks; a bad archive is a FleetError, which gateway/web/errors.py maps like every
user-facing error. Both routes are admin-only. Files go through data_dir/uploads/<random>/ (what a
crash leaves there is removed at the next start) and are removed before the response ends: the
export is opened and then unlinked, so even a client that disconnects leaves nothing behind.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from litestar import Controller, Response, get, post
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.exceptions import InternalServerException
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import (
    OpenAPIFormat,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    RequestBody,
    Schema,
)
from litestar.params import FromPath, FromQuery
from litestar.response import Stream

from gateway.config import Settings
from gateway.fleet.archive import export_version, import_archive
from gateway.records.jobs import UPLOADS_DIR
from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses_admin import ImportedVersion
from gateway.web.security import AppRequest, admin_guard
from gateway.web.uploads import FLUSH_BYTES, upload_gate

ARCHIVE_TYPES = ("application/octet-stream", "application/x-tar", "application/gzip", "application/x-gzip")
SPOOL_NAME = "uploaded-archive"  # the name FleetError messages give the request body
_BLOCK = 1 << 20


def _binary(description: str) -> OpenAPIMediaType:
    return OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY,
                                          description=description))


@dataclass
class ExportOperation(Operation):
    """The export streams a file: its 200 says which kinds (Litestar documents an empty schema)."""

    def __post_init__(self) -> None:
        ok = (self.responses or {}).get("200")
        if isinstance(ok, OpenAPIResponse):
            ok.content = {"application/x-tar": _binary("the signed archive (tar)"),
                          "application/gzip": _binary("the signed archive (tar.gz, with ?gzip=true)")}


@dataclass
class ImportOperation(Operation):
    """The import reads its body itself (streamed to disk), so its body is documented here."""

    def __post_init__(self) -> None:
        archive = _binary("The signed archive from `manualqa index export` or GET "
                          "/api/v1/index/versions/{version}/export (tar or tar.gz), as the raw body; "
                          f"also accepted as {', '.join(ARCHIVE_TYPES[1:])}")
        self.request_body = RequestBody(content={ARCHIVE_TYPES[0]: archive}, required=True)


def _spool_dir(settings: Settings) -> Path:
    folder = Path(settings.data_dir) / UPLOADS_DIR / secrets.token_hex(8)
    folder.mkdir(parents=True)
    return folder


def _file_chunks(fh: IO[bytes]) -> Iterator[bytes]:
    with fh:
        while block := fh.read(_BLOCK):
            yield block


async def receive_archive(request: AppRequest, target: Path, max_mb: int) -> int:
    """Stream the raw request body into `target`, capped at max_mb while it arrives; its size, or ApiError.

    An error answered before the whole body was read says `Connection: close`, so that the server
    does not go on reading the rest of a body it has refused. The caller removes `target`.
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    cap = max_mb << 20
    size, finished = 0, False
    too_large = ApiError(413, "payload_too_large", f"archive exceeds {max_mb} MB (server.max_upload_mb); "
                         "import a larger one on the gateway with `manualqa index import FILE`")
    try:
        if kind not in ARCHIVE_TYPES:
            raise ApiError(415, "unsupported_media_type", "send the archive as the raw request body with "
                           "Content-Type: application/octet-stream (curl --data-binary @FILE), not "
                           f"{kind or 'no content type'}")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise too_large
        with target.open("xb") as out:
            pending = bytearray()
            try:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > cap:
                        raise too_large
                    pending += chunk
                    if len(pending) >= FLUSH_BYTES:
                        block, pending = bytes(pending), bytearray()
                        await sync_to_thread(out.write, block)
            except InternalServerException as exc:  # the client went away mid-body
                raise ApiError(400, "invalid_request", f"upload interrupted: {exc.detail}") from None
            finished = True
            await sync_to_thread(out.write, bytes(pending))
    except ApiError as exc:
        if not finished:
            exc.headers.setdefault("Connection", "close")
        raise
    if size == 0:
        raise ApiError(400, "invalid_request", "the request body is empty: send the archive itself "
                       "(curl --data-binary @FILE -H 'Content-Type: application/octet-stream')")
    return size


class FleetController(Controller):
    path = "/index"
    tags = ["index"]

    @get("/versions/{version:str}/export", guards=[admin_guard], operation_class=ExportOperation,
         summary="The version with its original PDFs as one signed archive (tar; tar.gz with ?gzip=true)")
    async def export(self, settings: NamedDependency[Settings], services: NamedDependency[Services],
                     version: FromPath[str], gzip: FromQuery[bool] = False,
                     signing_key: FromQuery[str | None] = None) -> Stream:
        """Signed with this gateway's signing key (the only one, or `signing_key`: its id or name)."""
        store = services.store
        if version not in {v["id"] for v in await sync_to_thread(store.list_versions)}:
            raise ApiError(404, "not_found", f"no index version {version!r}")
        name = f"{version}.tar{'.gz' if gzip else ''}"
        folder = _spool_dir(settings)
        try:
            report = await sync_to_thread(export_version, store, version, folder / name, signing_key,
                                          compress=gzip)
            fh = (folder / name).open("rb")  # open, then unlinked below: it lives as long as the stream
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        headers = {"Content-Length": str(report["bytes"]), "X-Archive-Sha256": report["sha256"],
                   "X-Signing-Key-Id": report["key_id"], "Content-Disposition": f'attachment; filename="{name}"'}
        return Stream(_file_chunks(fh), media_type="application/gzip" if gzip else "application/x-tar",
                      headers=headers)

    @post("/import", guards=[admin_guard], status_code=201, operation_class=ImportOperation,
          responses={200: ResponseSpec(ImportedVersion, description="The version was already here, identical")},
          summary="Check a signed archive and add its version, inactive")
    async def import_(self, request: AppRequest, settings: NamedDependency[Settings],
                      services: NamedDependency[Services]) -> Response[ImportedVersion]:
        """201 with the new (inactive) version; 200 when it is already here with the same content."""
        with upload_gate(request).slot():
            folder = _spool_dir(settings)
            try:
                await receive_archive(request, folder / SPOOL_NAME, settings.server.max_upload_mb)
                embedder = services.embedder  # its id and weights hash: vectors of another model are refused
                report = await sync_to_thread(import_archive, services.store, folder / SPOOL_NAME,
                                              embedder.model_id, embedder.model_hash)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        return Response(ImportedVersion(**report), status_code=201 if report["status"] == "imported" else 200)
