"""Manuals: list, upload (-> ingest job), delete, the original PDF, one page's text; jobs.

The upload body is streamed to disk by gateway.web.uploads (never parsed in memory).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litestar import Controller, delete, get, post, put
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import FromPath, JSONBody
from litestar.response import File

from gateway.config import Settings
from gateway.records.jobs import JobRunner
from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.ranges import pdf_response
from gateway.web.responses_admin import IngestReportOut, Job, ManualList, ManualTitle, OcrWord, PageText, UploadAccepted
from gateway.web.schemas import TitleRequest
from gateway.web.security import AppRequest, admin_guard, reader_guard
from gateway.web.uploads import FILE_FIELD, receive_upload, upload_gate
from ingest.models import IngestError
from ingest.ocr import unread_notes
from ingest.sandbox import parse_pdf

SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def _manuals(services: Services) -> list[dict[str, Any]]:
    """The active version's manuals, with the pages pdftotext re-spaced from its manifest (the chunk
    store does not keep them)."""
    if services.store.active_id() is None:
        return []
    version = services.store.open()
    rows = version.chunks.manuals()
    respaced = {str(m.get("sha256")): list(m.get("respaced") or []) for m in version.manifest.get("manuals", [])}
    for row in rows:
        row["respaced_pages"] = respaced.get(row["sha256"], [])
    services.show_titles(rows)
    return rows


def find_manual(services: Services, manual_id: str) -> dict[str, Any]:
    if not SHA_RE.match(manual_id):
        raise ApiError(404, "not_found", "manual ids are the sha256 of the PDF (64 hex characters)")
    for manual in _manuals(services):
        if manual["sha256"] == manual_id:
            return manual
    raise ApiError(404, "not_found", f"no manual {manual_id} in the active index version")


@dataclass
class UploadOperation(Operation):
    """The upload reads its body itself (gateway.web.uploads), so its form is documented here."""

    def __post_init__(self) -> None:
        pdf = Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY, content_media_type="application/pdf",
                     description="The PDF manual, sent as a file (with its file name)")
        form = Schema(type=OpenAPIType.OBJECT, required=[FILE_FIELD], properties={FILE_FIELD: pdf},
                      description="multipart/form-data with the PDF in the field `data`; other fields are "
                                  "ignored; a form without it is a 400")
        self.request_body = RequestBody(content={"multipart/form-data": OpenAPIMediaType(schema=form)},
                                        required=True)


def shown_name(original: str | None, fallback: str) -> str:
    """The upload's own base name, for messages (never used as a path)."""
    return Path((original or "").replace("\\", "/")).name or fallback


class ManualsController(Controller):
    tags = ["manuals"]

    @get("/manuals", guards=[reader_guard], summary="Manuals in the active index version")
    async def list_manuals(self, services: NamedDependency[Services]) -> ManualList:
        manuals = await sync_to_thread(_manuals, services)
        return ManualList(version=services.store.active_id(), manuals=[
            {**m, "id": m["sha256"], "file_url": f"/api/v1/manuals/{m['sha256']}/file"} for m in manuals])

    @post("/manuals", guards=[admin_guard], status_code=202, operation_class=UploadOperation,
          summary="Upload a PDF manual; starts an ingest job")
    async def upload(self, request: AppRequest, settings: NamedDependency[Settings],
                     services: NamedDependency[Services],
                     jobs: NamedDependency[JobRunner]) -> UploadAccepted:
        with upload_gate(request).slot():
            upload = await receive_upload(request, settings.data_dir / "uploads", settings.server.max_upload_mb)
            folder, target, name = upload.folder, upload.path, upload.path.name
            try:
                with target.open("rb") as fh:
                    if not fh.read(1024).lstrip().startswith(b"%PDF-"):
                        raise ApiError(415, "unsupported_media_type",
                                       f"{shown_name(upload.original_name, name)} is not a PDF file")
                try:
                    parsed = await sync_to_thread(parse_pdf, target, services.parse_limits)
                except IngestError as exc:
                    raise ApiError(422, "invalid_pdf", str(exc)) from exc
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise

        def work(progress: Callable[[str, int, int], None]) -> dict[str, object]:
            try:
                report = services.ingest([target], progress=progress)
                done: dict[str, object] = report.to_dict()
                return done
            finally:
                shutil.rmtree(folder, ignore_errors=True)

        job_id = jobs.submit("ingest", work, message=f"ingest {name}")
        return UploadAccepted(job=job_id, job_url=f"/api/v1/jobs/{job_id}", file_name=name,
                              sha256=parsed.sha256, pages=parsed.page_count,
                              pages_without_text=parsed.pages_without_text,
                              unread=unread_notes(parsed.unread, parsed.ocr_engine, len(parsed.ocr)),
                              respaced_pages=parsed.respaced)

    @get("/jobs/{job_id:str}", guards=[reader_guard], summary="Progress of an ingest job")
    async def job(self, jobs: NamedDependency[JobRunner], job_id: FromPath[str]) -> Job:
        row = await sync_to_thread(jobs.get, job_id)
        if row is None:
            raise ApiError(404, "not_found", f"no job {job_id}")
        return Job(**row)

    @delete("/manuals/{manual_id:str}", guards=[admin_guard], status_code=200,
            summary="Remove a manual (builds a new index version without it)")
    async def remove(self, services: NamedDependency[Services], manual_id: FromPath[str]) -> IngestReportOut:
        find_manual(services, manual_id)
        report = await sync_to_thread(services.store.remove, manual_id)
        return IngestReportOut(**report.to_dict())

    @put("/manuals/{manual_id:str}/title", guards=[admin_guard], status_code=200,
         summary="Give a manual a display title (lists, passages, citations); the index is unchanged")
    async def rename(self, services: NamedDependency[Services], manual_id: FromPath[str],
                     data: JSONBody[TitleRequest]) -> ManualTitle:
        find_manual(services, manual_id)
        return ManualTitle(**await sync_to_thread(services.rename_manual, manual_id, data.title))

    @delete("/manuals/{manual_id:str}/title", guards=[admin_guard], status_code=200,
            summary="Show the PDF's own title again")
    async def reset_title(self, services: NamedDependency[Services], manual_id: FromPath[str]) -> ManualTitle:
        find_manual(services, manual_id)
        return ManualTitle(**await sync_to_thread(services.rename_manual, manual_id, None))

    @get("/manuals/{manual_id:str}/file", guards=[reader_guard], summary="The original PDF",
         media_type="application/pdf")
    async def file(self, request: AppRequest, services: NamedDependency[Services],
                   manual_id: FromPath[str]) -> File:
        """The whole PDF, or the one byte range asked for (206), so viewers fetch only what they show."""
        manual = find_manual(services, manual_id)
        path = services.store.manual_pdf(manual_id)
        if not Path(path).is_file():
            raise ApiError(404, "not_found", f"the original PDF of {manual['file_name']} is missing")
        return pdf_response(Path(path), manual["file_name"], request.headers.get("range"))  # type: ignore[return-value]

    @get("/manuals/{manual_id:str}/pages/{page:int}", guards=[reader_guard],
         summary="Text of one page (1-based), for highlighting")
    async def page(self, services: NamedDependency[Services], manual_id: FromPath[str],
                   page: FromPath[int]) -> PageText:
        manual = find_manual(services, manual_id)
        if page < 1 or page > int(manual["page_count"]):
            raise ApiError(404, "not_found", f"{manual['file_name']} has pages 1-{manual['page_count']}")
        store = services.store.open().chunks
        text = store.page_text(manual_id, page) or ""
        ocr = store.ocr_page(manual_id, page)
        if ocr is None:
            return PageText(manual=manual["file_name"], title=manual["title"], page=page, text=text,
                            has_text=bool(text.strip()))
        words = [OcrWord(text=text[int(w[5]):int(w[6])], box=[float(v) for v in w[:4]], confidence=float(w[4]))
                 for w in ocr.words]
        return PageText(manual=manual["file_name"], title=manual["title"], page=page, text=text,
                        has_text=bool(text.strip()), source="ocr", ocr_confidence=ocr.confidence, words=words)
