"""`manualqa doctor` and `manualqa profile show|activate|rollback|history`: the deployment profile.

The profile says which backend, artifact and locked runtime versions a site runs; `doctor` runs the
three gates of the design card on it and records the verdict for the admin page, and `profile`
switches the active one atomically (with a rollback stack), refusing a profile that fails gate 1.
The gates are in gateway/qualification/, the profiles in runtimes/ and which one is active in
gateway.records.active_profile; this module is their terminal side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from gateway.cli.root import Ctx, audited, emit_json, json_option, main, pass_ctx, user_errors

if TYPE_CHECKING:
    from gateway.qualification.verdicts import DoctorReport
    from gateway.records.active_profile import ActiveProfile
    from runtimes.profiles import Profile


def _lines(pairs: list[tuple[str, object]], width: int = 16) -> None:
    for key, value in pairs:
        text = str(value)
        first, *rest = text.splitlines() or [""]
        click.echo(f"{key:<{width}}{first}")
        for line in rest:
            click.echo(f"{'':<{width}}{line}")


def _load(path: str) -> Profile:
    from runtimes.profiles import load_profile

    with user_errors("profile: "):
        return load_profile(path)


def _in_force(ctx: Ctx) -> tuple[Profile, str]:
    """(profile, where it comes from): settings runtime.profile, the activated one, or built-in."""
    from gateway.records.active_profile import ActiveProfile

    override = ctx.settings.runtime.profile
    if override:
        return _load(override), f"settings runtime.profile = {override}"
    store = ActiveProfile(ctx.settings.data_dir)
    with user_errors("active profile: "):
        profile = store.current()
    if store.active_file():
        return profile, f"activated ({store.pointer})"
    return profile, "built-in default (no profile activated)"


def _chain_lines(chain: Mapping[str, object], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in chain.items():
        if isinstance(value, dict):
            out.extend(_chain_lines(value, f"{prefix}{key}."))
        else:
            text = str(value)
            out.append(f"{prefix}{key}: {text if len(text) <= 90 else text[:89] + '…'}")
    return out


def _map(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def print_report(report: DoctorReport) -> None:
    from gateway.qualification.verdicts import TITLES

    dev, art, prof = report.device, report.artifact, report.profile
    gpus = dev.get("gpu", "unknown")
    gpu = gpus if isinstance(gpus, str) else ", ".join(
        f"{g.get('name')} (driver {g.get('driver_version')})" for g in (gpus if isinstance(gpus, list) else [])
        if isinstance(g, Mapping))
    locked = _map(report.runtime.get("locked", {}))
    installed = _map(report.runtime.get("installed", {}))
    runtime = "\n".join(f"{k} {installed.get(k) or 'not found'} (locked {v})" for k, v in locked.items())
    rollback = "\n".join(
        f"{e['role']}: {e.get('name', '?')} [{e.get('path') or 'none'}]"
        + (f" sha256 {str(e['sha256'])[:16]}…" if e.get("sha256") else "") for e in report.rollback_set)
    pairs: list[tuple[str, object]] = [
        ("profile", f"{prof['name']} [{prof['path']}]"),
        ("target device", prof["target_device"]),
        ("device", dev["error"] if "error" in dev else
         f"{dev['machine']}, {dev['cpu']}, {dev['cpu_count']} CPUs, {dev['memory_mib']} MiB, {dev['system']}"
         + (f", board {dev['board']}" if dev.get("board") else "")),
        ("gpu", gpu),
        ("backend", report.backend),
        ("artifact", art.get("path") or art.get("declared") or "-"),
        ("  sha256", f"{art.get('sha256') or '-'} (expected {art.get('expected_sha256') or 'not set'})"),
        ("  size", f"{art['size_bytes']} bytes" if "size_bytes" in art else "-"),
        ("  source", " -> ".join(str(x) for x in (art.get("source"), art.get("conversion"),
                                                  art.get("quantization")) if x) or "-"),
        ("runtime", runtime or "(no versions locked)"),
        ("chain id", report.chain_id or "- (not loaded)"),
    ]
    if report.chain:
        pairs.append(("chain", "\n".join(_chain_lines({k: v for k, v in report.chain.items()
                                                        if k != "chain_id"}))))
    pairs += [
        ("embedding", report.embedding_model),
        ("rollback set", rollback),
        ("owners", "\n".join(f"{k}: {v}" for k, v in report.owners.items())),
    ]
    _lines(pairs)
    click.echo("")
    for gate in report.gates:
        verdict = {"pass": "PASS", "fail": "FAIL", "skipped": "SKIPPED"}.get(gate.status, "NOT RUN")
        click.echo(f"gate {gate.gate}  {verdict:<7} {TITLES[gate.gate]}")
        click.echo(f"        {gate.detail}")
    failed = ", ".join(str(g) for g in report.failed_gates())
    click.echo(f"overall {'PASS' if report.passed else 'FAIL (gate ' + failed + ')'}; "
               + ("qualified for generate mode (gate 4)" if report.qualified
                  else "not qualified for generate mode: under answer.mode = \"auto\" its answers are extractive"))


@main.command("doctor")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False), default=None,
              help="Profile TOML to check (default: the profile in force).")
@click.option("--answers", "answers_file", type=click.Path(dir_okay=False), default=None,
              help="Gate 4 on this gold question set (JSONL, as `replay run`) instead of the profile's "
                   "answers.questions.")
@click.option("--no-answers", is_flag=True, help="Skip gate 4 (the last measured verdict is shown).")
@json_option("Print the record as JSON.")
@pass_ctx
def doctor(ctx: Ctx, profile_path: str | None, answers_file: str | None, no_answers: bool, as_json: bool) -> None:
    """Check a deployment profile's gates and print the responsibility record.

    \b
    1. the artifact has the expected sha256, loads on the locked runtime and answers a smoke prompt
    2. the intended backend really does the work (no silent CPU fallback)
    3. the rollback profile exists and passes gate 1
    4. answers: a replay of a gold question set (--answers, or the profile's answers.questions) on
       the active index clears the profile's [answers] bar; it takes minutes, and without a set it
       is skipped. A profile that passed it is qualified for generate mode.
    Exits 1 when any gate that ran fails.
    """
    from gateway.qualification.answers_gate import answers_gate
    from gateway.qualification.doctor import run_and_record

    if answers_file and no_answers:
        raise click.UsageError("--answers and --no-answers contradict each other")
    profile = _load(profile_path) if profile_path else _in_force(ctx)[0]
    # the server's /api/v1/deployment and the admin page show the latest verdicts
    facts = ctx.services.retrieval_facts()
    gate4 = None if no_answers or not (answers_file or profile.answer_questions()) else \
        answers_gate(ctx.settings, answers_file)
    with audited(ctx, "doctor", profile.name) as note:  # the verdict is recorded: the page shows it
        report, _, warning = run_and_record(ctx.settings.data_dir, profile, ctx.settings.embedding.model, facts,
                                            answers=gate4)
        failed = ", ".join(map(str, report.failed_gates()))
        note.detail = "passed" if report.passed else f"failed gates {failed}"
    if warning:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        emit_json({**report.to_dict(), "retrieval": facts})
    else:
        print_report(report)
        rr = facts["reranker"]
        click.echo(f"retrieval: embedder {facts['embedding'].get('model_id')} "
                   f"({str(facts['embedding'].get('model_hash'))[:12]}), reranker "
                   + (f"{rr['model_id']} ({rr['model_hash'][:12]})" if rr.get("model_id")
                      else rr.get("error") or "off"))
    if not report.passed:
        click.get_current_context().exit(1)


@main.group("profile")
def profile() -> None:
    """Show and switch the active deployment profile (atomically, with rollback)."""


@profile.command("show")
@json_option()
@pass_ctx
def profile_show(ctx: Ctx, as_json: bool) -> None:
    """The profile in force and where it comes from."""
    prof, source = _in_force(ctx)
    data = {"source": source, **prof.to_dict()}
    if as_json:
        emit_json(data)
        return
    art = _map(data["artifact"])
    _lines([
        ("profile", data["name"]), ("source", source), ("file", data["path"]),
        ("description", data["description"] or "-"), ("target device", data["target_device"]),
        ("backend", data["backend"]), ("artifact", art["resolved_path"]),
        ("  sha256", art["sha256"] or "not set"), ("  source", art["source"] or "-"),
        ("  quantization", art["quantization"] or "-"),
        ("runtime", ", ".join(f"{k} {v}" for k, v in _map(data["runtime"]).items()) or "(none locked)"),
        ("options", ", ".join(f"{k}={v}" for k, v in _map(data["options"]).items()) or "-"),
        ("generation", ", ".join(f"{k}={v}" for k, v in _map(data["generation"]).items())),
        ("embedding", _map(data["embedding"])["model"]),
        ("owners", "\n".join(f"{k}: {v}" for k, v in _map(data["owners"]).items())),
        ("rollback", data["rollback_path"] or "none"),
    ])


def _override_warning(ctx: Ctx) -> None:
    if ctx.settings.runtime.profile:
        click.echo(f"warning: settings runtime.profile = {ctx.settings.runtime.profile} overrides the "
                   "activated profile until it is removed", err=True)


def _store(ctx: Ctx) -> ActiveProfile:
    from gateway.records.active_profile import ActiveProfile

    return ActiveProfile(ctx.settings.data_dir)


@profile.command("activate")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--skip-doctor", is_flag=True, help="Activate without running gate 1 first.")
@json_option()
@pass_ctx
def profile_activate(ctx: Ctx, path: str, skip_doctor: bool, as_json: bool) -> None:
    """Make PATH the active profile; refused when it fails gate 1 (unless --skip-doctor)."""
    prof = _load(path)
    gate: dict[str, object] | None = None
    if not skip_doctor:
        from gateway.qualification.load_gate import gate_one

        result, _ = gate_one(prof)
        gate = result.to_dict()
        if not result.passed:
            raise click.ClickException(f"refused: {prof.name} fails gate 1: {result.detail} "
                                       "(the active profile is unchanged)")
    store = _store(ctx)
    with audited(ctx, "profile.activate", prof.name) as note, \
            user_errors("activate: ", " (the active profile is unchanged)", also=(OSError,)):
        note.detail = str(path)
        active = store.activate(path)
    if as_json:
        emit_json({"active": active.to_dict(), "stored_as": store.active_file(), "gate1": gate})
    else:
        click.echo(f"activated {active.name} (stored as {store.dir / store.active_file()})"
                   + ("" if gate is None else "; gate 1 passed"))
    _override_warning(ctx)


@profile.command("rollback")
@json_option()
@pass_ctx
def profile_rollback(ctx: Ctx, as_json: bool) -> None:
    """Re-activate the previously active profile."""
    store = _store(ctx)
    with audited(ctx, "profile.rollback") as note, user_errors("rollback: ", also=(OSError,)):
        active = store.rollback()
        note.target = active.name
    if as_json:
        emit_json({"active": active.to_dict(), "stored_as": store.active_file()})
    else:
        where = store.active_file() or "built-in default"
        click.echo(f"rolled back: {active.name} is active ({where})")
    _override_warning(ctx)


@profile.command("history")
@json_option()
@pass_ctx
def profile_history(ctx: Ctx, as_json: bool) -> None:
    """Activation stack, newest first (rollback pops the top)."""
    entries = list(reversed(_store(ctx).history()))
    if as_json:
        emit_json(entries)
        return
    if not entries:
        click.echo("no profile activated: the built-in default is active")
    for i, e in enumerate(entries):
        click.echo(f"{'*' if i == 0 else ' '} {e['activated_at'] or '-':<25} {e['name']:<32} {e['file']}")

