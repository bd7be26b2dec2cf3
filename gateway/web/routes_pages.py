"""The technician page, the page viewer, the admin page (cookie session login with a key) and static assets.

The three pages come in the technician's language (gateway/web/page_language.py)."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from litestar import Controller, MediaType, Response, get, post
from litestar.datastructures import Cookie
from litestar.openapi.plugins import OpenAPIRenderPlugin
from litestar.response import Redirect
from litestar.static_files import create_static_files_router

from gateway.web import page_language
from gateway.web.errors import ApiError
from gateway.web.security import SESSION_COOKIE, SESSION_TTL_S, AppRequest, live_session, services_of

UI_DIR = Path(__file__).resolve().parent.parent.parent / "ui"
STATIC_DIR = UI_DIR / "static"
PAGES_DIR = UI_DIR / "templates"

# The viewer's pdf.js is ES modules (.mjs) and WebAssembly: browsers refuse a module script served as
# application/octet-stream, which is what a Python without .mjs in its table (3.10, no /etc/mime.types) says.
mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("application/wasm", ".wasm")


def _page(name: str, request: AppRequest) -> Response[str]:
    """The page in the technician's language (gateway/web/page_language.py)."""
    asked = request.query_params.get("lang")
    lang = page_language.choose(asked, request.cookies.get(page_language.COOKIE),
                                request.headers.get("accept-language"))
    cookies = []
    if page_language.language_of(asked):  # ?lang=de: the next visit without it is in German too
        cookies.append(Cookie(key=page_language.COOKIE, value=lang, path="/", samesite="lax",
                              max_age=page_language.COOKIE_MAX_AGE_S))
    # Vary: a cache between phone and gateway must not hand one technician's language to another.
    page = page_language.render(name, lang, request.app.state.catalogues)  # the app's catalogues
    return Response(page, media_type=MediaType.HTML, cookies=cookies,
                    headers={"Cache-Control": "no-cache", "Content-Language": lang,
                             "Vary": "Accept-Language, Cookie"})


class PagesController(Controller):
    include_in_schema = False

    @get("/")
    async def technician(self, request: AppRequest) -> Response[str]:
        return _page("index.html", request)

    @get("/viewer")
    async def viewer(self, request: AppRequest) -> Response[str]:
        """One PDF page rendered by pdf.js with the cited sentences marked, for phones that ignore #page=N.

        A page without data: ui/static/viewer.js reads ?manual=<sha256>&q=<sentence>...#page=N (or ?page=N)
        and fetches the PDF from /api/v1/manuals/{id}/file with the page's key, so the file route's access
        rules and byte ranges apply unchanged.
        """
        return _page("viewer.html", request)

    @get("/admin")
    async def admin(self, request: AppRequest) -> Response[str]:
        return _page("admin.html", request)

    @post("/admin/login", status_code=200)
    async def login(self, request: AppRequest) -> Response[dict[str, str]]:
        gw = services_of(request)
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("application/json"):
            body = await request.json()
            key = body.get("key") if isinstance(body, dict) else None
        else:
            form = await request.form()
            key = form.get("key")
        principal = gw.keys.verify(str(key or "").strip())
        if principal is None:
            raise ApiError(401, "unauthorized", "unknown or revoked key")
        if not principal.is_admin:
            raise ApiError(403, "forbidden", f"key {principal.name!r} is not an admin key")
        sid, session = gw.sessions.create(principal)
        cookie = Cookie(key=SESSION_COOKIE, value=sid, httponly=True, samesite="strict", path="/",
                        max_age=SESSION_TTL_S, secure=request.url.scheme == "https")
        return Response({"name": principal.name, "role": principal.role, "csrf": session.csrf},
                        cookies=[cookie])

    @get("/admin/session")
    async def session(self, request: AppRequest) -> dict[str, str]:
        session = live_session(request)
        if session is None:
            raise ApiError(401, "unauthorized", "not logged in")
        return {"name": session.principal.name, "role": session.principal.role, "csrf": session.csrf}

    @post("/admin/logout", status_code=200)
    async def logout(self, request: AppRequest) -> Response[dict[str, str]]:
        services_of(request).sessions.drop(request.cookies.get(SESSION_COOKIE))
        return Response({"status": "logged out"},
                        cookies=[Cookie(key=SESSION_COOKIE, value="", max_age=0, path="/")])

    @get("/docs")
    async def docs_redirect(self) -> Redirect:
        return Redirect("/api/v1/schema")


class OfflineDocs(OpenAPIRenderPlugin):
    """An interactive API page from local assets only (Litestar's default pages use a CDN)."""

    def render(self, request: AppRequest, openapi_schema: dict[str, object]) -> bytes:
        return (PAGES_DIR / "apidocs.html").read_bytes()


static_router = create_static_files_router(path="/static", directories=[STATIC_DIR],
                                           include_in_schema=False)
