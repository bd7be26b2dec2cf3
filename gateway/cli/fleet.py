"""`manualqa index export` / `index import` and `manualqa signing ...`: signed index archives for a fleet.

Thin, like the other command modules: gateway.fleet does the work and its FleetError reaches the
user as `Error: ...` through gateway.cli.root. `export` and `import` join the `index` group of
gateway.cli.index through `in_group` (a command module imports gateway.cli.root only). Exports,
imports and the signing keys made or trusted here are in the audit trail (`audited`).
"""

from __future__ import annotations

from pathlib import Path

import click

from gateway.cli.root import Ctx, audited, emit_json, in_group, json_option, main, pass_ctx


def _size(value: int) -> str:
    return f"{value / (1 << 20):.1f} MiB" if value >= 1 << 20 else f"{value} bytes"


@in_group("index")
@click.command("export")
@click.argument("version")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--key", default=None, help="Signing key id or name (default: the only one on this gateway).")
@click.option("--gzip", "compress", is_flag=True, help="Compress the archive (tar.gz); default is a plain tar.")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@json_option()
@pass_ctx
def export_(ctx: Ctx, version: str, file: Path, key: str | None, compress: bool, force: bool,
            as_json: bool) -> None:
    """Write VERSION with its original PDFs to FILE, signed, for `manualqa index import` elsewhere."""
    from gateway.fleet.archive import export_version

    with audited(ctx, "index.export", version) as note:
        note.detail = str(file)
        report = export_version(ctx.services.store, version, file, key, compress=compress, overwrite=force)
    if as_json:
        emit_json(report)
        return
    click.echo(f"exported {report['version']} ({report['manuals']} manuals) to {report['file']}: "
               f"{_size(report['bytes'])}, signed by key {report['key_id']}")
    click.echo(f"sha256 {report['sha256']}")


@in_group("index")
@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--max-size", "max_mib", type=click.IntRange(min=1), default=None,
              help="Refuse archives whose payload is larger than this many MiB (default 4096).")
@click.option("--check", is_flag=True, help="Only check the archive (signature, checksums, model); write nothing.")
@json_option()
@pass_ctx
def import_(ctx: Ctx, file: Path, max_mib: int | None, check: bool, as_json: bool) -> None:
    """Check a signed archive from `index export` and add its version, inactive.

    \b
    Activation stays a separate step, after replaying the version:
      manualqa replay run QUESTIONS.jsonl --version V; manualqa index activate V
    """
    from gateway.fleet.archive import DEFAULT_MAX_BYTES, check_archive, import_archive

    gw = ctx.services
    embedder = gw.embedder  # id and weights hash only: the model itself is not loaded
    max_bytes = max_mib << 20 if max_mib else DEFAULT_MAX_BYTES
    if check:  # a check writes nothing: not an action
        report = check_archive(gw.store, file, embedder.model_id, embedder.model_hash, max_bytes=max_bytes)
    else:
        with audited(ctx, "index.import", str(file)) as note:
            report = import_archive(gw.store, file, embedder.model_id, embedder.model_hash, max_bytes=max_bytes)
            note.target, note.detail = report["version"], f"{report['status']} from {file}"
    if as_json:
        emit_json(report)
        return
    v = report["version"]
    if check:
        click.echo(f"{file}: ok: version {v}, {report['manuals']} manuals, signed by {report['signed_by']}"
                   f"{' (already present here)' if report['status'] == 'already present' else ''}")
    elif report["status"] == "already present":
        click.echo(f"version {v} is already present with the same content; nothing to do")
    else:
        click.echo(f"imported version {v} (inactive; {report['manuals']} manuals, {report['manuals_added']} new "
                   f"PDFs), signed by {report['signed_by']}")
        click.echo(f"replay it (`manualqa replay run QUESTIONS.jsonl --version {v}`), "
                   f"then make it active with `manualqa index activate {v}`")


@main.group("signing")
def signing() -> None:
    """Keys that sign index archives (create, list, export-public) and the keys trusted to import."""


def _data_dir(ctx: Ctx) -> Path:
    return Path(ctx.settings.data_dir)


@signing.command("create")
@click.argument("name")
@json_option()
@pass_ctx
def create(ctx: Ctx, name: str, as_json: bool) -> None:
    """Make a new Ed25519 signing key NAME (private half stays in the data directory, mode 0600)."""
    from gateway.fleet.signing import create_key

    with audited(ctx, "signing.create", name) as note:
        key = create_key(_data_dir(ctx), name)
        note.detail = f"key id {key['id']}"
    if as_json:
        emit_json(key)
        return
    click.echo(f"created signing key {key['id']} ({key['name']})")
    click.echo(f"share its public half: manualqa signing export-public {key['id']} --out {key['name']}.pub")


@signing.command("list")
@json_option()
@pass_ctx
def list_(ctx: Ctx, as_json: bool) -> None:
    """This gateway's signing keys and the keys it trusts."""
    from gateway.fleet.signing import list_keys

    keys = list_keys(_data_dir(ctx))
    if as_json:
        emit_json(keys)
        return
    if not keys:
        click.echo("no signing keys and no trusted keys")
    for k in keys:
        roles = ", ".join(r for r, on in (("signs here", k["private"]), ("trusted", k["trusted"])) if on)
        click.echo(f"{k['id']}  {k['name']:<24} {str(k['created_at'])[:19]}  {roles}")


@signing.command("export-public")
@click.argument("key")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the public key file here (default: print it).")
@json_option()
@pass_ctx
def export_public_(ctx: Ctx, key: str, out: Path | None, as_json: bool) -> None:
    """The public key file of KEY (id or name), for `manualqa signing trust` on other gateways."""
    import json

    from gateway.fleet.signing import export_public

    data = export_public(_data_dir(ctx), key)
    if out is not None:
        out.write_bytes(data)
    doc: dict[str, object] = json.loads(data)
    if as_json:
        emit_json({"id": doc["id"], "name": doc["name"], **({"file": str(out)} if out else {"public_key": doc})})
    elif out is not None:
        click.echo(f"wrote public key {doc['id']} ({doc['name']}) to {out}")
    else:
        click.echo(data.decode("utf-8"), nl=False)


@signing.command("trust")
@click.argument("pubfile", type=click.Path(dir_okay=False, path_type=Path))
@json_option()
@pass_ctx
def trust_(ctx: Ctx, pubfile: Path, as_json: bool) -> None:
    """Accept index archives signed by the key in PUBFILE (from `signing export-public`, or PEM)."""
    from gateway.fleet.signing import trust

    with audited(ctx, "signing.trust", str(pubfile)) as note:
        result = trust(_data_dir(ctx), pubfile)
        note.target = f"{result['id']} ({result['name']})"
        note.detail = "already trusted" if result["already_trusted"] else ""
    if as_json:
        emit_json(result)
    else:
        click.echo(f"{'already trusted' if result['already_trusted'] else 'trusted'}: "
                   f"key {result['id']} ({result['name']})")


@signing.command("untrust")
@click.argument("key")
@json_option()
@pass_ctx
def untrust_(ctx: Ctx, key: str, as_json: bool) -> None:
    """Stop accepting archives signed by KEY (id or name); versions already imported stay."""
    from gateway.fleet.signing import untrust

    with audited(ctx, "signing.untrust", key) as note:
        result = untrust(_data_dir(ctx), key)
        note.detail = f"removed {', '.join(result['removed'])}"
    if as_json:
        emit_json(result)
    else:
        click.echo(f"no longer trusted: {', '.join(result['removed'])}")
