"""`manualqa replay` (run, compare, list, show): the upgrade gate from the command line.

A replay answers a fixed question set and stores the run with its metrics in gateway.db;
`compare` puts two runs side by side, writes the HTML report and exits 1 when the gate fails, so a
site's upgrade script can stop on it. The work is in gateway.qa.replay / compare / report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gateway.cli.root import Ctx, emit_json, json_option, main, pass_ctx

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

    from gateway.answer.request import Mode


class DefaultRunGroup(click.Group):
    """`manualqa replay FILE` means `manualqa replay run FILE`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@main.group("replay", cls=DefaultRunGroup)
def replay() -> None:
    """Replay a question set and compare runs (the upgrade gate).

    \b
      manualqa replay sample_manuals/questions.jsonl --label baseline
      manualqa replay compare baseline candidate --report report.html
    """


def _progress(total: int, quiet: bool) -> ProgressBar[int] | None:
    if quiet or not sys.stderr.isatty():
        return None
    bar = click.progressbar(length=total, label="replay", file=sys.stderr)
    bar.__enter__()
    return bar


@replay.command("run")
@click.argument("questions", type=click.Path(exists=True, dir_okay=False))
@click.option("--url", help="Replay against a running gateway (http://host:8080) instead of in-process.")
@click.option("--key", envvar="MANUALQA_KEY", help="API key for --url (or $MANUALQA_KEY).")
@click.option("--label", default="", help="A name for this run (used by compare).")
@click.option("--scope-by-manual", is_flag=True, help="Scope each question to its gold manual.")
@click.option("--profile", type=click.Path(exists=True, dir_okay=False), help="In-process: this profile.")
@click.option("--version", "version", help="In-process: this index version instead of the active one.")
@click.option("--mode", type=click.Choice(["generate", "extractive"]), default=None,
              help="In-process: answer in this mode, as answer.mode set to it would (generate: measured even if "
                   "the profile has not passed gate 4).")
@json_option()
@pass_ctx
def replay_run(ctx: Ctx, questions: str, url: str | None, key: str | None, label: str, scope_by_manual: bool,
               profile: str | None, version: str | None, mode: Mode | None, as_json: bool) -> None:
    """Answer every question of QUESTIONS (.jsonl) and store the run with its metrics."""
    from gateway.qa.replay import identity_line, load_questions, local_answerer, remote_answerer, run_replay

    settings = ctx.settings
    qs = load_questions(questions)
    for problem in qs.problems:
        click.echo(f"warning: {questions}: {problem} (skipped)", err=True)
    if url:
        if profile or version:
            raise click.UsageError("--profile/--version apply in-process only, not with --url")
        answerer = remote_answerer(url, key, scope_by_manual)
        deployment: dict[str, object] = {"via": url}  # the identity comes from its answers (deployment_of)
    else:
        if profile:
            settings.runtime.profile = profile
        if mode:  # the operator's pin for this run, as gate 4's: a replay measures the model, drafts or not
            settings.answer.mode = mode
        gw = ctx.services
        answerer = local_answerer(gw, scope_by_manual, mode, version)
        deployment = {"profile": gw.profile.name, "mode": mode or gw.answer_mode().mode, "via": "in-process"}
    gw_embed = ctx.services.embedder.encode
    bar = _progress(len(qs.questions), as_json)
    summary = run_replay(answerer, qs, settings.db_path, label=label, source=questions,
                         deployment=deployment, embed=gw_embed,
                         progress=(lambda done, total: bar.update(1)) if bar else None)
    if bar:
        bar.__exit__(None, None, None)
    if as_json:
        emit_json(summary)
        return
    m = summary["metrics"]
    click.echo(f"run {summary['id']} {label!r}: {summary['questions']} questions; "
               f"deployment {identity_line(summary['deployment'])}")
    from gateway.qa.metrics import METRICS

    for metric in METRICS:
        if metric.name in m:
            click.echo(f"  {metric.name:<28} {m.get(metric.name)}")
    click.echo(f"  outcomes               {m.get('outcomes')}")


@replay.command("compare")
@click.argument("baseline")
@click.argument("candidate")
@click.option("--gate", "gate_path", type=click.Path(dir_okay=False), help="Gate TOML (default: built-in).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Write an HTML report.")
@json_option()
@pass_ctx
def replay_compare(ctx: Ctx, baseline: str, candidate: str, gate_path: str | None,
                   report_path: str | None, as_json: bool) -> None:
    """Per-metric deltas, changed answers, and the gate verdict (exit 1 when it fails)."""
    from gateway.qa.compare import compare_runs, load_gate
    from gateway.qa.replay import get_run
    from gateway.qa.report import render_report

    gate = load_gate(gate_path)
    cmp = compare_runs(get_run(ctx.settings.db_path, baseline), get_run(ctx.settings.db_path, candidate), gate)
    if report_path:
        Path(report_path).write_text(render_report(cmp), encoding="utf-8")
    if as_json:
        emit_json(cmp.to_dict())
    else:
        click.echo(f"baseline  {cmp.baseline['id']} {cmp.baseline['label']!r}")
        click.echo(f"candidate {cmp.candidate['id']} {cmp.candidate['label']!r}")
        click.echo(f"{'metric':<24}{'baseline':>12}{'candidate':>12}{'delta':>10}")
        for name, d in cmp.deltas.items():
            if d["baseline"] is None and d["candidate"] is None:
                continue
            click.echo(f"{name:<24}{_f(d['baseline']):>12}{_f(d['candidate']):>12}{_f(d['delta']):>10}")
        click.echo(f"\n{len(cmp.changed)} question(s) changed:")
        for ch in cmp.changed[:30]:
            click.echo(f"  {ch['question_id']}: {', '.join(ch['changes'])}  "
                       f"[{'; '.join(ch['baseline']['citations'])}] -> [{'; '.join(ch['candidate']['citations'])}]")
        if report_path:
            click.echo(f"\nreport: {report_path}")
        click.echo("\nGATE " + ("PASSED" if cmp.passed else "FAILED"))
        for v in cmp.violations:
            click.echo(f"  - {v}")
    if not cmp.passed:
        sys.exit(1)


def _f(v: object) -> str:
    return "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


@replay.command("list")
@json_option()
@pass_ctx
def replay_list(ctx: Ctx, as_json: bool) -> None:
    """Stored replay runs, newest first."""
    from gateway.qa.replay import list_runs

    runs = list_runs(ctx.settings.db_path)
    if as_json:
        emit_json(runs)
        return
    for r in runs:
        m = r["metrics"]
        click.echo(f"{r['id']}  {r['time']}  {r['label'] or '-':<16} hit@5={m.get('hit_at_5')} "
                   f"coverage={m.get('citation_coverage')} questions={m.get('questions')}")


@replay.command("show")
@click.argument("run")
@json_option()
@pass_ctx
def replay_show(ctx: Ctx, run: str, as_json: bool) -> None:
    """One run (id, id prefix or label) with its per-question rows."""
    from gateway.qa.replay import get_run, identity_line

    r = get_run(ctx.settings.db_path, run)
    if as_json:
        emit_json(r)
        return
    click.echo(f"run {r['id']} {r['label']!r} at {r['time']}; deployment {identity_line(r['deployment'])}")
    for k, v in r["metrics"].items():
        click.echo(f"  {k:<28} {v}")
    for it in r["items"]:
        cits = "; ".join(f"{c['manual']} p.{c['page']}" for c in it["citations"])
        click.echo(f"{it['question_id']:<10} {it['outcome']:<10} {cits}")
