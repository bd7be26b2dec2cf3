"""Display titles an admin gives manuals whose own title is useless ("about:blank", "Untitled").

The title inside an index version is what the PDF said when it was ingested, and versions are
immutable; a renamed title is how the gateway shows the manual (lists, passages, citations, the
answer log from then on), kept in gateway.db by sha256 so it survives re-ingest, rollback and a new
version of the index. Searching is unchanged (the embedded text keeps the PDF's own title).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.errors import GatewayError
from gateway.records.db import new_id, opened, utcnow

if TYPE_CHECKING:
    from retrieval.types import Hit

MAX_TITLE_CHARS = 200


class TitleError(GatewayError):
    http_status = 400
    code = "invalid_title"


def clean_title(title: str) -> str:
    """One line of printable text, at most MAX_TITLE_CHARS: what a card or a list can show."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(title)).split())
    if not text:
        raise TitleError("the title is empty")
    if len(text) > MAX_TITLE_CHARS:
        raise TitleError(f"the title is longer than {MAX_TITLE_CHARS} characters")
    return text


class DisplayTitles:
    def __init__(self, db_path: str | Path) -> None:
        self.db_path = db_path

    def all(self) -> dict[str, str]:
        with opened(self.db_path) as db:
            return {r["sha256"]: r["title"] for r in db.query("SELECT sha256, title FROM manual_titles")}

    def set(self, sha256: str, title: str) -> str:
        title = clean_title(title)
        with opened(self.db_path) as db:
            db.table("manual_titles").upsert({"sha256": sha256, "title": title, "updated": utcnow()}, pk="sha256")
        bump_stamp(self.db_path)
        return title

    def clear(self, sha256: str) -> bool:
        with opened(self.db_path) as db:
            gone = bool(db.execute("DELETE FROM manual_titles WHERE sha256 = ?", [sha256]).rowcount > 0)
        bump_stamp(self.db_path)
        return gone


# A TitleCache (one per gateway.services.Services) is keyed on a stamp file beside gateway.db that only a title change
# rewrites (after its commit), in whichever process made it: the server, `manualqa rename`. Not on
# gateway.db's own stat: every answer logged writes its WAL, so every search after an answer would
# read the table again over a new connection. Not on SQLite's data_version: it is per connection and
# moves with any other connection's commit (answers again). A restore (a new gateway.db, see
# gateway.records.restore) has a new inode, and no stamp or another one: read again too. A title
# written past DisplayTitles (sqlite3 by hand) shows once a title is next changed, or after a restart.
STAMP_SUFFIX = ".titles-stamp"


def stamp_path(db_path: str | Path) -> Path:
    return Path(f"{db_path}{STAMP_SUFFIX}")


def bump_stamp(db_path: str | Path) -> None:
    """Say "titles changed" to every process's cache: a fresh token, replaced atomically (never half
    written); a new token rather than a new mtime, which two renames within one clock tick share."""
    target = stamp_path(db_path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(new_id())
    os.replace(tmp, target)


Stamp = tuple[tuple[int, int] | None, str | None]  # (gateway.db's device and inode, the titles' stamp token)


def _stamp(db_path: str | Path) -> Stamp:
    """(gateway.db's device and inode, the titles' stamp token): changes only when titles may have."""
    try:
        st = Path(db_path).stat()
        db = (st.st_dev, st.st_ino)
    except FileNotFoundError:
        db = None
    try:
        token: str | None = stamp_path(db_path).read_text()
    except FileNotFoundError:
        token = None
    return (db, token)


class TitleCache:
    """The display titles last read per gateway.db, with the stamp they were read at (thread-safe):
    read again only when they changed. Its owner is the gateway (gateway.services.Services)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[Stamp, dict[str, str]]] = {}
        self._lock = threading.Lock()

    def current(self, db_path: str | Path) -> dict[str, str]:
        key = str(db_path)
        stamp = _stamp(db_path)
        with self._lock:
            cached = self._seen.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        titles = DisplayTitles(db_path).all()
        with self._lock:
            self._seen[key] = (stamp, titles)
        return titles


def current_titles(db_path: str | Path, cache: TitleCache | None = None) -> dict[str, str]:
    """The display titles: through `cache`, read from gateway.db only when they changed since its last
    read (every search and answer shows them, and a connection per search cost more than the search's
    SQL); without one, read now."""
    return (cache or TitleCache()).current(db_path)


def apply_titles(items: Iterable[Hit | MutableMapping[str, object]], titles: dict[str, str],
                 sha_key: str = "manual_sha256") -> None:
    """Show the display title on hits (objects) or manual rows (dicts), in place."""
    if not titles:
        return
    for item in items:
        if isinstance(item, MutableMapping):
            sha = item.get(sha_key) or item.get("sha256")
            if sha in titles:
                item.setdefault("pdf_title", item.get("title"))
                item["title"] = titles[sha]
        else:
            sha = getattr(item, sha_key, None)
            if sha in titles:
                item.title = titles[sha]
