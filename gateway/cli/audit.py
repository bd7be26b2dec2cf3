"""`manualqa audit`: the audit trail from a shell, newest first, as GET /api/v1/audit lists it.

Both read AuditLog.query (gateway.records.audit), so the rows are the same: the admin page's and the
API's actions (actor: the key's name, via key or session) and this CLI's own (actor `cli:<os user>`,
via cli, status the exit status), written by gateway.cli.root.audited.
"""

from __future__ import annotations

import click

from gateway.cli.root import Ctx, emit_json, json_option, main, pass_ctx

RESULTS = ("ok", "refused", "failed")  # gateway.records.audit.RESULTS, without importing it at startup


@main.command("audit")
@click.option("--action", default=None, help="Only this action, e.g. index.activate, key.create, login.")
@click.option("--result", type=click.Choice(RESULTS), default=None, help="Only ok, refused or failed actions.")
@click.option("--limit", type=click.IntRange(1, 100000), default=20, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@json_option("Print the page as JSON (entries, total), as the API does.")
@pass_ctx
def audit(ctx: Ctx, action: str | None, result: str | None, limit: int, offset: int, as_json: bool) -> None:
    """Who did what as an admin (web, API or this CLI), to what, and whether it worked; times in UTC."""
    from dataclasses import asdict

    from gateway.records.audit import AuditLog

    rows, total = AuditLog(ctx.settings.db_path).query(limit=limit, offset=offset, action=action, result=result)
    if as_json:
        emit_json({"entries": [asdict(r) for r in rows], "total": total, "limit": limit, "offset": offset})
        return
    if not rows:
        click.echo("no admin actions recorded" + (" matching these filters" if action or result else ""))
    for r in rows:
        who = r.actor or "(nobody recognised)"
        line = f"{r.time}  {who} ({r.via})  {r.action}  {r.target or '-'}  {r.result} {r.status}"
        click.echo(line + (f"  {r.detail}" if r.detail else ""))
    if total > offset + len(rows):
        click.echo(f"{offset + 1}-{offset + len(rows)} of {total}; more with --offset {offset + len(rows)}", err=True)
