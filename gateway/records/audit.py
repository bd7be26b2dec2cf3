"""The audit trail: who did what as an admin, to what, and whether it worked (table admin_audit).

Written by the web's audit middleware (gateway.web.audit) after each admin request has been
answered, so a refused or failed action is recorded as surely as one that worked, and by the CLI's
state-changing commands (gateway.cli.root.audited: actor `cli:<os user>`, via `cli`, status the exit
status), through the same AuditLog.record; read by GET /api/v1/audit, `manualqa audit` and the admin
page. Rows are small and few (admins act rarely): each is written at once on its own short
connection, never queued.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, get_args

from gateway.records.answer_rows import LogError
from gateway.records.db import new_id, opened, utcnow

Result = Literal["ok", "refused", "failed"]
RESULTS: tuple[Result, ...] = get_args(Result)
Via = Literal["key", "session", "none", "cli"]


def result_of(status: int) -> Result:
    """An HTTP status as an audit result: refused (401, 403: who asked may not) or failed (any other error)."""
    if status < 400:
        return "ok"
    return "refused" if status in (401, 403) else "failed"


@dataclass(frozen=True)
class AuditEntry:
    time: str
    actor: str
    via: str
    action: str
    target: str
    result: str
    status: int
    detail: str = ""
    id: str = ""


class AuditLog:
    def __init__(self, db_path: str | Path) -> None:
        self.path = Path(db_path)

    def record(self, action: str, actor: str, via: Via, target: str, status: int, detail: str = "",
               result: Result | None = None) -> AuditEntry:
        """One row; `result` is read from `status` (an HTTP status) unless given (the CLI's exit status is not one)."""
        entry = AuditEntry(id=new_id(), time=utcnow(), actor=actor[:200], via=via, action=action[:100],
                           target=target[:500], result=result or result_of(status), status=status,
                           detail=detail[:1000])
        with opened(self.path) as db, db.conn:
            db.conn.execute("INSERT INTO admin_audit (id, time, actor, via, action, target, result, status, detail)"
                            " VALUES (:id, :time, :actor, :via, :action, :target, :result, :status, :detail)",
                            asdict(entry))
        return entry

    @staticmethod
    def _where(action: str | None, result: str | None) -> tuple[str, list[str]]:
        clauses, params = [], []
        if action:
            clauses.append("action = ?")
            params.append(action)
        if result:
            if result not in RESULTS:
                raise LogError(f"result must be one of {', '.join(RESULTS)}, not {result!r}")
            clauses.append("result = ?")
            params.append(result)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def query(self, limit: int = 50, offset: int = 0, action: str | None = None,
              result: str | None = None) -> tuple[list[AuditEntry], int]:
        """A page of entries, newest first, and how many match in all."""
        where, params = self._where(action, result)
        with opened(self.path) as db:
            total = int(db.conn.execute(f"SELECT count(*) FROM admin_audit{where}", params).fetchone()[0])
            cur = db.conn.execute(f"SELECT id, time, actor, via, action, target, result, status, detail"
                                  f" FROM admin_audit{where} ORDER BY id DESC LIMIT ? OFFSET ?",
                                  [*params, limit, offset])
            names = [d[0] for d in cur.description]
            rows = [AuditEntry(**dict(zip(names, r, strict=True))) for r in cur.fetchall()]
        return rows, total
