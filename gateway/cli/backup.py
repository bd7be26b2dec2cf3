"""`manualqa backup` and `restore`: a consistent copy of the whole data directory, and its checked return.

Thin: gateway.records.backup does the work (online SQLite backup, verified index versions, a
backup.json of checksums written last; a restore verifies everything before it touches the data
directory). Its BackupError reaches the user as `Error: ...` through gateway.cli.root.
"""

from __future__ import annotations

from typing import Any

import click

from gateway.cli.root import Ctx, emit_json, json_option, main, pass_ctx


def _print_summary(verb: str, where: str, summary: dict[str, Any]) -> None:
    versions = summary["versions"]
    click.echo(f"{verb} {where}: {summary['files']} files, {summary['bytes'] / 1e6:.1f} MB, "
               f"{len(versions)} index version(s), {summary['answers'] or 0} logged answers")
    click.echo(f"active index version: {summary['active_version'] or '-'}   "
               f"active profile: {summary['active_profile'] or 'built-in default'}")
    for warning in summary["warnings"]:
        click.secho(f"warning: {warning}", fg="yellow", err=True)


@main.command("backup")
@click.argument("dest", type=click.Path(file_okay=False))
@json_option("Print the summary as JSON.")
@pass_ctx
def backup(ctx: Ctx, dest: str, as_json: bool) -> None:
    """Copy the data directory into the new directory DEST (safe while `manualqa serve` runs)."""
    from gateway.records.backup import create_backup

    summary = create_backup(ctx.settings.data_dir, dest)
    if as_json:
        emit_json(summary)
    else:
        _print_summary("backed up to", dest, summary)


@main.command("restore")
@click.argument("src", type=click.Path(file_okay=False, exists=True))
@click.option("--force", is_flag=True,
              help="Restore over a non-empty data directory: it is moved aside to <data>.before-restore-<time>.")
@json_option("Print the summary as JSON.")
@pass_ctx
def restore(ctx: Ctx, src: str, force: bool, as_json: bool) -> None:
    """Verify the backup SRC completely, then make it the data directory (stop the server first)."""
    from gateway.records.backup import restore_backup

    summary = restore_backup(src, ctx.settings.data_dir, force=force)
    if as_json:
        emit_json(summary)
        return
    _print_summary("restored into", str(ctx.settings.data_dir), summary)
    if summary["moved_aside"]:
        click.echo(f"the previous data directory was kept as {summary['moved_aside']}")
