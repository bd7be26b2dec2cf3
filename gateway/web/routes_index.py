"""Index versions: list, activate, rollback, diff, gc (admin for changes)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, get, post
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses_admin import Activated, GcDone, IndexDiff, RolledBack, VersionList
from gateway.web.security import admin_guard, reader_guard
from retrieval.types import RetrievalError
from retrieval.versions import IndexBusyError, IndexStore

Keep = Annotated[int, msgspec.Meta(ge=1, le=100_000, description="How many of the newest versions to keep")]


class GcRequest(msgspec.Struct, forbid_unknown_fields=True):
    """POST /api/v1/index/gc: keep the `keep` newest versions (the active one and its parent always stay)."""

    keep: Keep


def _gc(store: IndexStore, keep: int, dry_run: bool) -> GcDone:
    """IndexStore.gc (what `manualqa index gc` runs); a held index lock is a 409, not a bad request."""
    try:
        return GcDone(**store.gc(keep, dry_run=dry_run).to_dict())
    except IndexBusyError as exc:
        raise ApiError(409, "conflict", str(exc)) from exc


class IndexController(Controller):
    path = "/index"
    tags = ["index"]

    @get("/versions", guards=[reader_guard], summary="Index versions, newest first")
    async def versions(self, services: NamedDependency[Services]) -> VersionList:
        store = services.store
        versions = await sync_to_thread(store.list_versions)
        return VersionList(active=store.active_id(), versions=list(reversed(versions)))

    @post("/versions/{version:str}/activate", guards=[admin_guard], status_code=200,
          summary="Verify, then activate a version")
    async def activate(self, services: NamedDependency[Services], version: FromPath[str]) -> Activated:
        store = services.store
        _known(store, version)
        await sync_to_thread(store.activate, version)
        return Activated(active=store.active_id())

    @post("/rollback", guards=[admin_guard], status_code=200,
          summary="Re-activate the parent of the active version (or ?to=V)")
    async def rollback(self, services: NamedDependency[Services], to: FromQuery[str | None] = None) -> RolledBack:
        store = services.store
        previous = store.active_id()
        if to:
            _known(store, to)
        try:
            active = await sync_to_thread(store.rollback, to)
        except RetrievalError as exc:  # nothing to roll back to is a state conflict, not a bad request
            raise ApiError(409, "conflict", str(exc)) from exc
        return RolledBack(active=active, previous=previous)

    @get("/gc", guards=[admin_guard], summary="What POST /index/gc with this `keep` would remove now; removes nothing")
    async def gc_preview(self, services: NamedDependency[Services],
                         keep: Annotated[int, QueryParameter(ge=1, le=100_000)]) -> GcDone:
        return await sync_to_thread(_gc, services.store, keep, True)

    @post("/gc", guards=[admin_guard], status_code=200,
          summary="Remove all but the newest `keep` versions, never the active one or its parent")
    async def gc(self, services: NamedDependency[Services],
                 data: JSONBody[GcRequest]) -> GcDone:
        return await sync_to_thread(_gc, services.store, data.keep, False)

    @get("/diff", guards=[reader_guard], summary="Manuals added / removed / changed between versions")
    async def diff(self, services: NamedDependency[Services], from_: Annotated[str, QueryParameter(name="from")],
                   to: FromQuery[str]) -> IndexDiff:
        store = services.store
        _known(store, from_)
        _known(store, to)
        return IndexDiff(**await sync_to_thread(services.index_diff, from_, to))


def _known(store: IndexStore, version: str) -> None:
    if version not in {v["id"] for v in store.list_versions()}:
        raise ApiError(404, "not_found", f"no index version {version!r}")
