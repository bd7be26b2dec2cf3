"""`manualqa index ...` and `search`: the commands over the index's versions, and what one of them finds.

They are thin: retrieval.versions.IndexStore does the work (verify, activate atomically, collect old
versions) and its errors reach the user through gateway.cli.root. What lives here is only the
terminal side: the text renderings, and each change's row in the audit trail (`audited`, under the
action names the web's audit middleware uses). Manuals go in and out of the index through
gateway.cli.manuals (ingest, remove, rename); `index export` and `index import` join the group from
gateway.cli.fleet.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import click

from gateway.cli.root import Ctx, audited, emit_json, json_option, main, pass_ctx


@main.group("index")
def index() -> None:
    """Index versions: list, show, activate, rollback, diff, verify, gc."""


@index.command("list")
@json_option()
@pass_ctx
def list_(ctx: Ctx, as_json: bool) -> None:
    """All versions, oldest first; * marks the active one."""
    versions = ctx.services.store.list_versions()
    if as_json:
        emit_json(versions)
        return
    if not versions:
        click.echo("no index yet: run `manualqa ingest PATH`")
    for v in versions:
        mark = "*" if v["active"] else " "
        click.echo(f"{mark} {v['id']}  {str(v['created_at'])[:19]}  {v['manuals']:>3} manuals "
                   f"{v['chunks'] if v['chunks'] is not None else '?':>6} chunks  "
                   f"parent {v['parent'] or '-'}{'  UNREADABLE' if v.get('unreadable') else ''}")


@index.command("show")
@click.argument("version", required=False)
@json_option()
@pass_ctx
def show(ctx: Ctx, version: str | None, as_json: bool) -> None:
    """The manifest of VERSION (default: the active one)."""
    m = ctx.services.store.show(version)
    m = {**m, "reranker": ctx.services.retrieval_facts()["reranker"]}  # query-time: not in the manifest
    search = ctx.services.settings.search
    m["sentence_rank"] = {"weight": search.sentence_weight, "pool": search.sentence_pool,
                          "term_weight": search.term_weight,
                          "stored_chunks": ctx.services.store.open(m["id"]).chunks.sentence_vector_count()}
    if as_json:
        emit_json(m)
        return
    emb = m.get("embedding", {})
    click.echo(f"version   {m['id']}{'  (active)' if m.get('active') else ''}")
    click.echo(f"created   {m.get('created_at')}   parent {m.get('parent') or '-'}")
    click.echo(f"embedding {emb.get('model_id')} ({str(emb.get('model_hash'))[:12]}, "
               f"dim {emb.get('dim')})")
    rr = m["reranker"]
    click.echo(f"reranker  {rr['model_id']} ({str(rr['model_hash'])[:12]}, top {rr['pool']})" if rr.get("model_id")
               else f"reranker  {rr.get('error') or 'off (search.rerank)'}")
    sr = m["sentence_rank"]
    click.echo(f"sentences top {sr['pool']} by best sentence x {sr['weight']} + question words held x "
               f"{sr['term_weight']}; vectors stored for {sr['stored_chunks']} of {m.get('chunk_count')} chunks"
               if sr["weight"] > 0 or sr["term_weight"] > 0
               else "sentences off (search.sentence_weight and search.term_weight 0)")
    click.echo(f"chunker   {m.get('chunker')}   chunks {m.get('chunk_count')}")
    for man in m.get("manuals", []):
        click.echo(f"  {man['sha256'][:12]}  {man['file_name']}  \"{man['title']}\"  "
                   f"{man['page_count']} pages, {man.get('chunks')} chunks")


@index.command("activate")
@click.argument("version")
@json_option()
@pass_ctx
def activate(ctx: Ctx, version: str, as_json: bool) -> None:
    """Verify VERSION and make it the active one."""
    with audited(ctx, "index.activate", version):
        ctx.services.store.activate(version)
    if as_json:
        emit_json({"active": version})
    else:
        click.echo(f"active version: {version}")


@index.command("rollback")
@click.option("--to", "to", default=None, help="Version to activate (default: the active one's parent).")
@json_option()
@pass_ctx
def rollback(ctx: Ctx, to: str | None, as_json: bool) -> None:
    """Re-activate the previous version (or --to VERSION)."""
    store = ctx.services.store
    with audited(ctx, "index.rollback", to or "") as note:
        before = store.active_id()
        now = store.rollback(to)
        note.target, note.detail = now, f"from {before}" if before else ""
    if as_json:
        emit_json({"previous": before, "active": now})
    else:
        click.echo(f"rolled back: {before} -> {now}")


@index.command("diff")
@click.argument("a")
@click.argument("b")
@json_option()
@pass_ctx
def diff(ctx: Ctx, a: str, b: str, as_json: bool) -> None:
    """Manuals added, removed and changed from version A to version B."""
    d = ctx.services.index_diff(a, b)
    if as_json:
        emit_json(d)
        return

    def named(m: Mapping[str, object]) -> str:
        return f"{m['file_name']} {m['title']!r}" if m.get("title") else str(m["file_name"])

    click.echo(f"{a} -> {b}: chunks {d['chunks']['a']} -> {d['chunks']['b']}")
    for m in d["added"]:
        click.echo(f"  + {named(m)} ({m['sha256'][:12]})")
    for m in d["removed"]:
        click.echo(f"  - {named(m)} ({m['sha256'][:12]})")
    for m in d["changed"]:
        click.echo(f"  ~ {named(m)} ({m['old_sha256'][:12]} -> {m['new_sha256'][:12]})")
    if not (d["added"] or d["removed"] or d["changed"]):
        click.echo("  same manuals")
    if d["embedding_changed"] or d["chunker_changed"]:
        click.echo("  embedding model or chunker settings differ")


@index.command("verify")
@click.argument("version", required=False)
@json_option()
@pass_ctx
def verify(ctx: Ctx, version: str | None, as_json: bool) -> None:
    """Check VERSION (default: active): files, checksums, counts, FAISS load, SQLite integrity."""
    store = ctx.services.store
    version = version or store.active_id()
    problems = store.verify(version)
    if as_json:
        emit_json({"version": version, "ok": not problems, "problems": problems})
    elif problems:
        for p in problems:
            click.secho(f"{version}: {p}", fg="red", err=True)
    else:
        click.echo(f"{version}: ok")
    if problems:
        sys.exit(1)


@index.command("gc")
@click.option("--keep", type=click.IntRange(min=1), required=True,
              help="How many of the newest versions to keep (the active one and its parent always stay).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option()
@pass_ctx
def gc(ctx: Ctx, keep: int, dry_run: bool, as_json: bool) -> None:
    """Delete old index versions (the same function as POST /api/v1/index/gc)."""
    if dry_run:  # a preview changes nothing: not an action
        report = ctx.services.store.gc(keep, dry_run=True)
    else:
        with audited(ctx, "index.gc", f"keep {keep}") as note:
            report = ctx.services.store.gc(keep, dry_run=False)
            note.detail = f"removed {', '.join(report.removed) or 'nothing'}"
    if as_json:
        emit_json(report.to_dict())
        return
    removed = report.removed
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {len(removed)} version(s){': ' + ', '.join(removed) if removed else ''}"
               f" ({report.bytes_freed / 1e6:.1f} MB, {report.manuals_removed} original PDF(s) no kept version cites)")


@main.command("search")
@click.argument("question")
@click.option("--k", "k", type=click.IntRange(min=1, max=100), default=None, help="Passages (default 5).")
@click.option("--manual", "manuals", multiple=True, help="Only this manual (repeatable).")
@click.option("--version", "version", default=None, help="Search this index version, not the active one.")
@json_option()
@pass_ctx
def search(ctx: Ctx, question: str, k: int | None, manuals: tuple[str, ...], version: str | None,
           as_json: bool) -> None:
    """Ranked passages (manual, page, heading) for QUESTION, without generating an answer."""
    gw = ctx.services
    opened = gw.store.open(version)  # fails fast, before the embedding model loads
    hits = gw.search(question, k=k, manuals=list(manuals) or None, version=opened.id)
    if as_json:
        emit_json({"version": opened.id, "hits": [h.to_dict() for h in hits]})
        return
    if not hits:
        click.echo("no passages found")
    for rank, h in enumerate(hits, 1):
        snippet = " ".join(h.text.split())
        snippet = snippet[:200] + ("…" if len(snippet) > 200 else "")
        printed = f" (printed {h.page_label})" if h.page_label else ""
        click.echo(f"{rank}. {h.title} p.{h.page}{printed}  {h.heading or '-'}  (score {h.score:.4f})")
        click.echo(f"   {snippet}")
