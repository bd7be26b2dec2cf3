"""`manualqa ask` (streams the answer, then its citations) and `manualqa log` (the answer log).

The two belong together: `ask` writes one row to the answer log, `log show` reads it back with
its provenance (artifact chain, index version, timings), which is what a technician's "why did it
say that?" needs.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gateway.answer_fields import CLIENTS, OUTCOMES, Client, Outcome
from gateway.cli.root import Ctx, audited, emit_json, json_option, main, pass_ctx

if TYPE_CHECKING:
    from gateway.answer.result import AnswerResult
    from gateway.records.answers import LogRow
    from gateway.services import Services

EXIT_BY_OUTCOME: dict[Outcome, int] = {"answered": 0, "evidence_only": 0, "not_found": 0, "error": 1, "cancelled": 130}


def _print_citations(result: AnswerResult) -> None:
    for c in result.citations:
        label = f"[{c.n}] {c.title or c.manual} p.{c.page}" + (f" (printed {c.page_label})" if c.page_label else "")
        if c.source == "ocr":  # read from a scanned page image: a digit may be misread
            label += f" (OCR, check the page: {c.ocr_confidence:.0f} % confidence)"
        click.echo(label + ("  (supporting passage, not cited by the answer)" if c.supporting else ""))
    if result.outcome == "not_found":
        for p in result.passages[:3]:
            click.echo(f"  nearest: {p['title'] or p['manual']} p.{p['page']} "
                       f"(similarity {p['dense_score']:.2f})")


def _dicts(value: object) -> list[Mapping[str, object]]:
    """A JSON column that holds a list of objects (citations, passages, feedback), as read from the log."""
    return [x for x in value if isinstance(x, Mapping)] if isinstance(value, list) else []


def _strs(value: object) -> list[str]:
    """A JSON column that holds a list of strings (scope, flags)."""
    return [str(x) for x in value] if isinstance(value, list) else []


def _row_line(r: LogRow) -> str:
    q = str(r["question"]).replace("\n", " ")
    q = q if len(q) <= 60 else q[:57] + "..."
    ttft = r.get("ttft_ms")
    cites = ", ".join(f"p.{c['page']}" for c in _dicts(r["citations"]) if not c.get("supporting")) or "-"
    return (f"{r['id']}  {str(r['time'])[:19]}  {r['outcome']:<9}  {r['mode']:<19}  {r['client']:<6}  "
            f"ttft {'-' if ttft is None else f'{ttft:.0f} ms':>9}  {cites:<14}  {q}")


def _manifest_summary(gw: Services, version: object) -> dict[str, object] | None:
    if not version:
        return None
    try:
        m = gw.store.open(str(version)).manifest
    except Exception as exc:  # noqa: BLE001 - a gc'd version is reported, not fatal
        return {"id": version, "available": False, "detail": str(exc)}
    return {"id": version, "available": True, "created_at": m.get("created_at"), "parent": m.get("parent"),
            "embedding": m.get("embedding"), "chunker": m.get("chunker"), "chunk_count": m.get("chunk_count"),
            "digest": m.get("digest"), "tool": m.get("tool"),
            "manuals": [{k: x.get(k) for k in ("file_name", "title", "sha256", "page_count", "chunks")}
                        for x in _dicts(m.get("manuals", []))]}


@main.command("ask")
@click.argument("question")
@click.option("--manual", "manuals", multiple=True, help="Only these manuals (file name, title or "
              "sha256 prefix); repeatable.")
@json_option("Print the full answer record as JSON.")
@click.option("--mode", type=click.Choice(["generate", "extractive"]), default=None,
              help="As the API's `mode`: generate (the model writes; an unqualified profile's text is a labelled "
                   "draft) or extractive (no model). Default: the configured answer.mode.")
@click.option("--extractive", is_flag=True, help="The same as --mode extractive.")
@click.option("--version", default=None, help="Answer from this index version instead of the active one.")
@click.option("--max-tokens", type=click.IntRange(1, 4096), default=None, help="Cap on answer tokens.")
@pass_ctx
def ask(obj: Ctx, question: str, manuals: tuple[str, ...], as_json: bool, mode: str | None, extractive: bool,
        version: str | None, max_tokens: int | None) -> None:
    """Answer QUESTION from the manuals, streaming it, then list its citations (manual p.N).

    Exit status: 0 answered or not found, 1 error, 130 cancelled.
    """
    from gateway.answer.events import Final, Text
    from gateway.answer.pipeline import answer_events
    from gateway.answer.request import AnswerRequest

    gw = obj.services
    cancel = threading.Event()
    result = None
    streamed = False
    if extractive and mode == "generate":
        raise click.UsageError("--extractive and --mode generate contradict each other")
    chosen = "extractive" if extractive else mode
    request = AnswerRequest(question=question, scope=manuals, client="cli",
                            mode=chosen, version=version, max_tokens=max_tokens)  # type: ignore[arg-type]
    events = answer_events(gw.answer_deps(), request, cancel=cancel)
    try:
        for event in events:
            if isinstance(event, Text) and not as_json:
                click.echo(event.text, nl=False)
                streamed = True
            elif isinstance(event, Final):
                result = event.result
    except KeyboardInterrupt:
        cancel.set()
        close = getattr(events, "close", None)  # a generator: end it (its finally blocks run)
        if close is not None:
            close()
        click.echo("\n(cancelled)", err=True)
        sys.exit(130)
    finally:
        gw.log.flush()
    assert result is not None
    if as_json:
        emit_json(result.to_dict())
    else:
        if not streamed and result.answer:  # extractive: the evidence came whole, as the answer
            click.echo(result.answer, nl=False)
            streamed = True
        if streamed:
            click.echo()
        click.echo()
        _print_citations(result)
        notes = [f for f in result.flags if f.name != "weak_evidence"]
        click.echo(click.style(f"\n{result.outcome} · {result.mode} · answer {result.id} · index "
                               f"{result.index_version} · chain {result.chain_id or '-'}"
                               + (f" · flags: {'; '.join(notes)}" if notes else ""), dim=True), err=True)
        if result.error:
            click.echo(f"note: {result.error}", err=True)
    sys.exit(EXIT_BY_OUTCOME.get(result.outcome, 1))


@main.group("log", invoke_without_command=True)
@click.option("--since", default=None, help="ISO date/time, or an age like 30m, 1h, 2d.")
@click.option("--outcome", type=click.Choice(list(OUTCOMES)), default=None)
@click.option("--client", type=click.Choice(list(CLIENTS)), default=None,
              help="Who asked: web (the technician page), api, openai (/v1), cli, replay or bench.")
@click.option("--limit", type=click.IntRange(1, 100000), default=20, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@json_option()
@click.pass_context
def log_group(ctx: click.Context, since: str | None, outcome: str | None, client: Client | None,
              limit: int, offset: int, as_json: bool) -> None:
    """The answer log, newest first. Subcommands: show ID, export, retention."""
    if ctx.invoked_subcommand is not None:
        return
    obj: Ctx = ctx.obj
    rows = obj.services.log.query(since=since, outcome=outcome, client=client, limit=limit, offset=offset)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        filtered = since or outcome or client
        click.echo("no answers logged" + (" matching these filters" if filtered else ""))
    for r in rows:
        click.echo(_row_line(r))


@log_group.command("show")
@click.argument("answer_id")
@json_option()
@pass_ctx
def log_show(obj: Ctx, answer_id: str, as_json: bool) -> None:
    """The full provenance of one answer: chain, index version, config, timings, citations."""
    gw = obj.services
    row = gw.log.get(answer_id)
    if row is None:
        raise click.ClickException(f"no answer with id {answer_id!r} (see `manualqa log`)")
    chain_id = row.get("chain_id")
    row["chain"] = gw.log.chain(str(chain_id)) if chain_id else None
    row["index"] = idx = _manifest_summary(gw, row.get("index_version"))
    if as_json:
        emit_json(row)
        return
    out = click.echo
    out(f"answer     {row['id']}  ({row['time']}, client {row['client']}"
        + (f", key {row['key_name']}" if row.get("key_name") else "") + ")")
    out(f"question   {row['question']}")
    out(f"scope      {', '.join(_strs(row['scope'])) or 'all manuals'}")
    error = f"; error: {row['error']}" if row["error"] else ""
    out(f"outcome    {row['outcome']} ({row['mode']}){error}")
    out(f"flags      {'; '.join(_strs(row['flags'])) or '-'}")
    out(f"\n{row['answer']}\n")
    out("citations")
    for c in _dicts(row["citations"]):
        out(f"  [{c['n']}] {c['title'] or c['manual']} p.{c['page']}  {c['pdf_url']}"
            + ("  (supporting)" if c.get("supporting") else ""))
        for s in _strs(c.get("sentences")):
            out(f"       “{' '.join(s.split())}”")
    out("retrieved")
    for p in _dicts(row["passages"]):
        out(f"  {p.get('chunk_id')}  {p.get('manual')} p.{p.get('page')}  fused {p.get('score', 0):.4f}  "
            f"cos {p.get('dense_score') or 0:.3f}  ranks d{p.get('dense_rank')}/l{p.get('lexical_rank')}"
            + ("  (given)" if p.get("given") else ""))
    out(f"\nindex      {row['index_version']}" + ("" if not idx else
        f"  created {idx.get('created_at')}, parent {idx.get('parent')}, {idx.get('chunk_count')} chunks"
        if idx.get("available") else f"  (not on this gateway any more: {idx.get('detail')})"))
    if idx and idx.get("available"):
        for m in _dicts(idx["manuals"]):
            out(f"             {m['file_name']}  {m['title']}  {m['page_count']} pages  "
                f"{str(m['sha256'])[:12]}")
    out(f"profile    {row.get('profile') or '-'}")
    out(f"chain      {row.get('chain_id') or '- (no model took part)'}")
    if row["chain"]:
        emit_json(row["chain"])
    out(f"generation {row['generation_config'] or '-'}")
    t = row["timings"]
    out("timings    " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                  for k, v in (t.items() if isinstance(t, Mapping) else ())))
    for f in _dicts(row.get("feedback")):
        thumbs = f["thumbs"]
        out(f"feedback   {'+1' if isinstance(thumbs, int) and thumbs > 0 else '-1'} {f['time']} {f['comment']}")


@log_group.command("export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here instead of standard output.")
@click.option("--since", default=None)
@click.option("--outcome", type=click.Choice(list(OUTCOMES)), default=None)
@pass_ctx
def log_export(obj: Ctx, fmt: str, output: Path | None, since: str | None, outcome: str | None) -> None:
    """Every logged answer (oldest first) as JSON lines or CSV."""
    if output is None:
        obj.services.log.export(fmt, sys.stdout, since=since, outcome=outcome)
        return
    tmp = output.with_name(output.name + ".part")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        n = obj.services.log.export(fmt, fh, since=since, outcome=outcome)
    tmp.replace(output)
    click.echo(f"{n} answers written to {output}", err=True)


@log_group.command("retention")
@click.option("--days", type=click.IntRange(0), default=None,
              help="Delete answers (and their feedback) older than N days now; 0 keeps every answer. "
                   "Without it, show the setting.")
@json_option()
@pass_ctx
def log_retention(obj: Ctx, days: int | None, as_json: bool) -> None:
    """The answer log's retention: show it, or apply N days now (as the admin page's setting does).

    A running server keeps its own setting: this shell deletes what is older now, once; to keep N days
    from now on, set [log] retention_days in manualqa.toml (every start, then hourly) or change it on
    the server (admin page, PUT /api/v1/answers/retention)."""
    if days is None:
        configured = obj.settings.log.retention_days
        if as_json:
            emit_json({"days": configured, "configured": configured})
            return
        click.echo(f"answers older than {configured} days are deleted ([log] retention_days)" if configured
                   else "every answer is kept ([log] retention_days = 0)")
        return
    from gateway.records.retention import set_retention

    gw = obj.services
    with audited(obj, "retention.set", str(days)) as note:
        change = set_retention(gw.settings, gw.log, days)
        note.detail = f"was {change.previous_days}"
    if as_json:
        emit_json({"days": change.days, "previous_days": change.previous_days, "deleted": change.deleted,
                   "ran_at": change.ran_at})
        return
    click.echo(f"{change.deleted} answers older than {days} days deleted, with their feedback" if days
               else "retention 0: every answer is kept, nothing deleted")
    click.echo("a running server keeps its own setting: [log] retention_days in manualqa.toml, or the admin "
               "page, keeps it from now on", err=True)
