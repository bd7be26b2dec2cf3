"""`manualqa bench`: the same-conditions comparison of deployment profiles.

Each profile runs in its own process (gateway.qa.bench, gateway.qa.bench_worker), interleaved over
the repeats, and the recorded conditions (device, governor, load, thermal, power) are printed
with the figures, so two tables can be compared only when their conditions match.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from gateway.cli.root import Ctx, emit_json, json_option, main, pass_ctx, user_errors


@main.command("bench")
@click.option("--profiles", "profiles", multiple=True, metavar="A.toml [B.toml ...]",
              help="Deployment profiles to compare (list them after --profiles, or repeat the option).")
@click.argument("more_profiles", nargs=-1, metavar="")
@click.option("--questions", "questions", required=True, type=click.Path(dir_okay=False),
              help="Question set (.jsonl, the format of sample_manuals/questions.jsonl).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, 100),
              help="Interleaved rounds: A, B, A, B ...")
@click.option("--limit", default=0, type=click.IntRange(0), help="Use only the first N questions.")
@click.option("--max-tokens", default=None, type=click.IntRange(1),
              help="Output limit for every profile (default: the smallest any profile allows).")
@click.option("--timeout", "timeout_s", default=1800.0, show_default=True, help="Seconds per run.")
@click.option("--output", "output", type=click.Path(dir_okay=False), help="Also write the JSON here.")
@json_option("Print JSON instead of the table.")
@pass_ctx
def bench(ctx: Ctx, profiles: tuple[str, ...], more_profiles: tuple[str, ...], questions: str, repeat: int,
          limit: int, max_tokens: int | None, timeout_s: float, output: str | None, as_json: bool) -> None:
    """Compare deployment profiles under the same recorded conditions.

    Each profile runs in its own process on the active index: cold start, TTFT, sustained decode
    tokens/s, peak RSS, temperatures and answer quality, as medians with min-max over the repeats.

    \b
      manualqa bench --profiles profiles/x86-cpu.toml profiles/x86-cpu-1thread.toml \\
          --questions sample_manuals/questions.jsonl --limit 10 --repeat 3
    """
    from gateway.qa.bench import BenchError, BenchPlan, common_output_limit, run_bench, unique_labels
    from gateway.qa.replay import load_questions
    from retrieval.versions import IndexStore
    from runtimes.profiles import load_profile

    paths = [*profiles, *more_profiles]
    if not paths:
        raise click.UsageError("name at least one profile: --profiles A.toml [B.toml ...]")
    settings = ctx.settings
    with user_errors("bench: "):
        loaded = [load_profile(p) for p in paths]
        qs = load_questions(questions)
        if not IndexStore(settings.data_dir).active_id():
            raise BenchError(f"no active index in {settings.data_dir}: run `manualqa ingest PATH` first")
    for problem in qs.problems:
        click.echo(f"warning: {questions}: {problem} (skipped)", err=True)
    plan = BenchPlan(
        profiles=loaded, labels=unique_labels(loaded), questions_path=Path(questions),
        questions=qs.questions[: limit or None], data_dir=settings.data_dir, repeat=repeat,
        output_limit=common_output_limit(loaded, settings.answer.max_answer_tokens, max_tokens),
        config_path=ctx.config_path, timeout_s=timeout_s)
    report = run_bench(plan, progress=lambda msg: click.echo(f"bench: {msg}", err=True))
    if output:
        Path(output).write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    if as_json:
        emit_json(report)
    else:
        click.echo(render_table(report))
    if report["failed_runs"]:
        click.echo(f"bench: {report['failed_runs']} run(s) failed (see the notes)", err=True)
        sys.exit(1)


def _cell(s: dict[str, Any], fmt: str = "{:.0f}", scale: float = 1.0) -> str:
    if s.get("median") is None:
        return "-"
    med = fmt.format(s["median"] * scale)
    if s["n"] > 1 and s["min"] != s["max"]:
        return f"{med} ({fmt.format(s['min'] * scale)}-{fmt.format(s['max'] * scale)})"
    return med


def _temp(f: dict[str, Any]) -> str:
    before, after = f["temp_before_c"], f["temp_after_c"]
    if before["median"] is None:
        return "n/a"
    return f"{before['median']:.0f}->{after['median']:.0f}"


def render_table(report: dict[str, Any]) -> str:
    """Conditions, one row per profile (median (min-max) over repeats), quality, chains and notes."""
    c = report["conditions"]
    ps = c["prompt_set"]
    order = " ".join(o["profile"] for o in report["order"])
    thermal = c["thermal_c"] if isinstance(c["thermal_c"], str) else \
        ", ".join(f"{k} {v:.0f}C" for k, v in c["thermal_c"].items())
    power = c["power"] if isinstance(c["power"], str) else \
        "; ".join(f"{k}: {', '.join(f'{a}={b}' for a, b in v.items())}" for k, v in c["power"].items())
    lines = [
        f"manualqa bench: {len(report['profiles'])} profile(s) x {c['repeat']} repeat(s), "
        f"{ps['questions']} question(s) from {ps['file']} (sha256 {ps['file_sha256'][:12]})",
        f"device {c['device']} | {c['cpu_model']} | cores available {c['cores_available']} of "
        f"{c['cpu_count']} | governor {c['cpu_governor']} | load {c['load_average'][0]:.2f}",
        f"concurrency {c['concurrency']}, temperature {c['temperature']:g}, output limit "
        f"{c['output_limit_tokens']} tokens, index {', '.join(c['index_version']) or '-'}",
        f"thermal: {thermal}",
        f"power: {power}",
        f"run order: {order}",
        "",
    ]
    head = ["profile", "backend", "threads", "n_ctx", "cold start s", "TTFT ms", "decode tok/s",
            "peak RSS MB", "temp C", "chain"]
    rows = [head]
    for p in report["profiles"]:
        f = p["figures"]
        chain = p["chain_id"] if isinstance(p["chain_id"], str) else ",".join(p["chain_id"]) or "-"
        rows.append([p["label"], p["backend"], str(p["threads"] or "-"), str(p["context_length"] or "-"),
                     _cell(f["cold_start_ms"], "{:.2f}", 0.001), _cell(f["ttft_ms_median"]),
                     _cell(f["decode_tps"], "{:.1f}"), _cell(f["peak_rss_mb"]), _temp(f), chain])
    lines += _grid(rows)
    lines.append("")
    from gateway.qa.metrics import BY_NAME, names

    quality = names("quality")
    qhead = ["profile", *(BY_NAME[k].label for k in quality), "outcomes"]
    qrows = [qhead]
    for p in report["profiles"]:
        q = p["quality"]
        qrows.append([p["label"], *(_cell(q[k], "{:.2f}") for k in quality), json.dumps(p["outcomes"] or {})])
    lines += _grid(qrows)
    lines.append("")
    lines.append("figures: median (min-max) over the repeats; TTFT = question to first token (retrieval "
                 "included); decode tok/s = output tokens after the first / decode seconds, all answers")
    for p in report["profiles"]:
        ch = p["chain"] or {}
        quant = (ch.get("quantization") or {}).get("name") if isinstance(ch.get("quantization"), dict) \
            else ch.get("quantization")
        art = ch.get("artifact") or {}
        lines.append(f"chain {p['label']}: {p['chain_id']} quantization {quant or p['declared_quantization']}"
                     f", artifact {Path(str(art.get('path', '-'))).name} sha256 {str(art.get('sha256', '-'))[:12]}")
    for note in report["notes"]:
        lines.append(f"NOTE: {note}")
    return "\n".join(lines)


def _grid(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
