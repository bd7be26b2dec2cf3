"""`manualqa ingest`, `remove` and `rename`: the commands that change which manuals the index holds, or
how one is shown.

They are thin: retrieval.versions.IndexStore does the work (build beside the active version,
verify, activate atomically) and its errors reach the user through gateway.cli.root. What lives
here is only the terminal side: the ingest progress bar and the report's text rendering, and each
change's row in the audit trail (`audited`, under the action names the web's audit middleware uses).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from gateway.cli.root import Ctx, audited, emit_json, json_option, main, pass_ctx

if TYPE_CHECKING:
    from retrieval.builder import IngestReport


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A click progress bar on a terminal: half parsing (files), half embedding (chunks)."""
    if not enabled:
        yield None
        return
    state = {"parse": (0, 0), "embed": (0, 0)}
    bar: Any  # click types a length-only bar's items as None; its current_item here is the stage (a str)
    with click.progressbar(length=1000, label="Ingesting", file=sys.stderr,
                           item_show_func=lambda _: _describe(state)) as bar:
        def update(stage: str, done: int, total: int) -> None:
            state[stage] = (done, total)
            pd, pt = state["parse"]
            ed, et = state["embed"]
            parsed = pd / pt if pt else 0.0
            embedded = ed / et if et else 0.0
            target = int(500 * parsed + 500 * embedded * parsed)
            bar.update(max(0, target - bar.pos), current_item=stage)

        yield update


def _describe(state: dict[str, tuple[int, int]]) -> str:
    pd, pt = state["parse"]
    ed, et = state["embed"]
    return f"parsed {pd}/{pt} files, embedded {ed}/{et} chunks"


def _print_report(report: IngestReport) -> None:
    for label, names in (("added", report.added), ("changed", report.changed),
                         ("unchanged", report.unchanged), ("removed", report.removed)):
        if names:
            click.echo(f"{label:>9}: {', '.join(names)}")
    if report.reprocessed and report.version:
        click.echo(f"re-embedded every manual: {report.reprocessed}")
    for file, message in report.failed:
        click.secho(f"   FAILED: {file}: {message}", fg="red", err=True)
    for file, message in report.unread:
        click.secho(f"  WARNING: {file}: {message}", fg="yellow", err=True)
    if report.version:
        click.echo(f"new active version {report.version} ({report.chunks} chunks, {report.embedded} "
                   f"embedded, {report.pages} pages parsed, {report.seconds:.1f} s)")
    elif report.added or report.changed or report.unchanged or not report.failed:
        click.echo("no change: the active index already holds these manuals")
    else:
        click.echo("no change: nothing could be ingested")


def _changed(report: IngestReport) -> str:
    """An ingest or removal in the audit trail's words: the version it made, or none."""
    failed = f"; failed: {', '.join(f for f, _ in report.failed)}" if report.failed else ""
    return (f"new version {report.version}" if report.version else "no change") + failed


@main.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--rebuild", is_flag=True,
              help="Re-chunk and re-embed every manual (needed after changing the embedding model).")
@json_option("Print the report as JSON.")
@pass_ctx
def ingest(ctx: Ctx, paths: tuple[str, ...], rebuild: bool, as_json: bool) -> None:
    """Add or update manuals (PDF files or folders); builds and activates a new index version."""
    gw = ctx.services
    with audited(ctx, "manual.ingest", " ".join(paths)) as note, \
            _progress(not as_json and sys.stderr.isatty()) as progress:
        report = gw.store.ingest(list(paths), gw.embedder, gw.chunk_params, gw.parse_limits,
                                 progress=progress, rebuild=rebuild)
        note.detail = _changed(report)
        nothing = bool(report.failed) and not (report.added or report.changed or report.unchanged)
        note.exit_status = 1 if nothing else 0
    if as_json:
        emit_json(report.to_dict())
        for file, message in report.failed:
            click.echo(f"FAILED: {file}: {message}", err=True)
    else:
        _print_report(report)
    if nothing:
        sys.exit(1)


@main.command("remove")
@click.argument("manual")
@json_option()
@pass_ctx
def remove(ctx: Ctx, manual: str, as_json: bool) -> None:
    """Build and activate a version without MANUAL (file name, title or sha256 prefix)."""
    with audited(ctx, "manual.delete", manual) as note:
        report = ctx.services.store.remove(manual)
        note.detail = _changed(report)
    if as_json:
        emit_json(report.to_dict())
    else:
        _print_report(report)


@main.command("rename")
@click.argument("manual")
@click.argument("title", required=False)
@click.option("--reset", is_flag=True, help="Show the PDF's own title again.")
@json_option()
@pass_ctx
def rename(ctx: Ctx, manual: str, title: str | None, reset: bool, as_json: bool) -> None:
    """Give MANUAL (file name, title or sha256 prefix) a display title; the index is unchanged."""
    if reset == (title is not None):
        raise click.UsageError("give either a TITLE or --reset")
    with audited(ctx, "manual.title_reset" if reset else "manual.title", manual) as note:
        row = ctx.services.rename_manual(manual, None if reset else title)
        note.target, note.detail = row.get("sha256") or manual, "" if reset else str(title)
    if as_json:
        emit_json(row)
    else:
        click.echo(f"{row['file_name']}: shown as {row['title']!r} (the PDF says {row['pdf_title']!r})")
