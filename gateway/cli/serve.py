"""`manualqa serve` and `manualqa keys`: the server and the API keys it accepts.

`serve` only applies --host/--port to the settings, builds gateway.web.app and hands it to
uvicorn (gateway.web.drain: SIGTERM drains the answers in progress, then exits 0). Keys are made
here, from a shell on the gateway, because the API cannot hand out its own first key: a key is
printed once and only its hash is kept in gateway.db (gateway.records.keys); creating and revoking
one is in the audit trail (key.create, key.revoke), as over the API.
"""

from __future__ import annotations

import click

from gateway.cli.root import Ctx, audited, emit_json, json_option, main, pass_ctx


@main.command("serve")
@click.option("--host", default=None, help="Bind address (default: server.host, 0.0.0.0).")
@click.option("--port", type=int, default=None, help="Port (default: server.port, 8080).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@pass_ctx
def serve(ctx: Ctx, host: str | None, port: int | None, log_level: str) -> None:
    """Serve the technician page, the admin page, the JSON API and /v1 (OpenAI-compatible)."""
    from gateway.web.app import create_app
    from gateway.web.drain import serve as serve_app

    settings = ctx.settings
    if host:
        settings.server.host = host
    if port:
        settings.server.port = port
    app = create_app(settings)
    shown = "localhost" if settings.server.host in ("0.0.0.0", "::") else settings.server.host
    click.echo(f"manualqa: serving on http://{shown}:{settings.server.port}/ (admin: /admin, "
               f"API docs: /api/v1/schema); data in {settings.data_dir}", err=True)
    serve_app(app, settings.server.host, settings.server.port, settings.server.drain_timeout_s, log_level)


@main.group("keys")
def keys() -> None:
    """API keys (reader | admin). A key is printed once; only its hash is stored."""


@keys.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(["reader", "admin"]), default="reader", show_default=True)
@json_option()
@pass_ctx
def keys_create(ctx: Ctx, name: str, role: str, as_json: bool) -> None:
    """Create a key NAME and print it (once)."""
    with audited(ctx, "key.create", name) as note:  # the name and role, never the key
        note.detail = role
        key = ctx.services.keys.create(name, role)
    if as_json:
        emit_json({"name": name, "role": role, "key": key})
    else:
        click.echo(key)
        click.echo(f"key {name!r} ({role}) created; it is shown only this once", err=True)


@keys.command("list")
@json_option()
@pass_ctx
def keys_list(ctx: Ctx, as_json: bool) -> None:
    """List keys (names and roles, never the keys)."""
    rows = ctx.services.keys.list()
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        click.echo(f"{r['name']:<24} {r['role']:<7} created {r['created']}"
                   + (f"  REVOKED {r['revoked']}" if r["revoked"] else ""))


@keys.command("revoke")
@click.argument("name")
@pass_ctx
def keys_revoke(ctx: Ctx, name: str) -> None:
    """Revoke the key NAME."""
    with audited(ctx, "key.revoke", name):
        if not ctx.services.keys.revoke(name):
            raise click.ClickException(f"no active key named {name!r}")
    click.echo(f"key {name!r} revoked")
