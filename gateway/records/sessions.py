"""Admin cookie sessions in gateway.db, so that a restart (or an upgrade) does not log admins out.

What is stored, and why it is safe to store:

- ``id_hash``: the sha256 of the session id (the ``mqa_session`` cookie value), never the id. The id
  is 256 random bits, so a plain hash cannot be reversed or guessed, and a copy of gateway.db (a
  backup, a support bundle) holds nothing a browser could present as a cookie.
- ``key_hash``: the hash of the admin key that logged in (``api_keys.key_hash``). Every lookup joins
  ``api_keys`` and requires the key to be unrevoked, so revoking a key (the CLI, in another process)
  ends all its sessions at the next request; those rows are then deleted.
- ``csrf``: the session's CSRF token, in plain. It must be recoverable: ``GET /admin/session`` hands
  it back to the admin page after a reload. It authorises nothing alone (a write also needs the
  cookie, whose only trace here is a hash), and whoever can read gateway.db is the trusted operator
  (docs/security.md). The web compares it with the header in constant time (``secrets.compare_digest``).
- ``created`` / ``expires``: UTC ISO timestamps in gateway.db's one format; fixed width, so SQL
  compares them as text. Expired rows are refused and deleted (each login prunes them all).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from gateway.records.db import iso_utc, opened
from gateway.records.keys import Principal

DEFAULT_TTL_S = 8 * 3600

__all__ = ["DEFAULT_TTL_S", "Session", "SessionStore", "id_hash"]


@dataclass(frozen=True)
class Session:
    principal: Principal
    csrf: str
    expires: str  # ISO 8601 UTC


def id_hash(session_id: str) -> str:
    """What gateway.db keeps of a session id: its sha256 (hex)."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


class SessionStore:
    """Server-side admin sessions, one row each in ``admin_sessions``; safe across processes."""

    def __init__(self, db_path: Path, ttl_s: int = DEFAULT_TTL_S) -> None:
        self.db_path = db_path
        self.ttl_s = ttl_s

    def create(self, principal: Principal) -> tuple[str, Session]:
        """A new session for a verified admin key: (session id for the cookie, session)."""
        if not principal.key_hash:
            raise ValueError("a session needs the key that logged in (Principal.key_hash)")
        sid = secrets.token_urlsafe(32)
        now = datetime.now(timezone.utc)
        session = Session(principal, secrets.token_urlsafe(24), iso_utc(now + timedelta(seconds=self.ttl_s)))
        with opened(self.db_path) as db:
            db.execute("delete from admin_sessions where expires <= ?", [iso_utc(now)])
            db.execute("insert into admin_sessions (id_hash, key_hash, csrf, created, expires) "
                       "values (?, ?, ?, ?, ?)",
                       [id_hash(sid), principal.key_hash, session.csrf, iso_utc(now), session.expires])
        return sid, session

    def get(self, sid: str | None) -> Session | None:
        """The live session of this cookie value, or None (unknown, expired, or its key revoked)."""
        if not sid:
            return None
        hashed = id_hash(sid)
        now = iso_utc(datetime.now(timezone.utc))
        with opened(self.db_path) as db:
            row = db.execute(
                "select s.csrf, s.expires, s.key_hash, k.name, k.role, k.revoked from admin_sessions s "
                "left join api_keys k on k.key_hash = s.key_hash where s.id_hash = ?", [hashed]).fetchone()
            if row is None:
                return None
            csrf, expires, key_hash, name, role, revoked = row
            if name is None or revoked is not None:  # revoked since login: end every session of the key
                db.execute("delete from admin_sessions where key_hash = ?", [key_hash])
                return None
            if expires <= now:
                db.execute("delete from admin_sessions where id_hash = ?", [hashed])
                return None
        return Session(Principal(name, role, key_hash), csrf, expires)

    def drop(self, sid: str | None) -> bool:
        """Logout: delete this session's row; whether there was one."""
        if not sid:
            return False
        with opened(self.db_path) as db:
            return bool(db.execute("delete from admin_sessions where id_hash = ?", [id_hash(sid)]).rowcount > 0)

    def drop_key(self, key_hash: str) -> int:
        """End every session logged in with this key; returns how many."""
        with opened(self.db_path) as db:
            return int(db.execute("delete from admin_sessions where key_hash = ?", [key_hash]).rowcount)

    def prune(self) -> int:
        """Delete every expired session; returns how many."""
        now = iso_utc(datetime.now(timezone.utc))
        with opened(self.db_path) as db:
            return int(db.execute("delete from admin_sessions where expires <= ?", [now]).rowcount)
