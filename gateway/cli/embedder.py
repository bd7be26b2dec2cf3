"""`manualqa embedder convert SRC OUT [--int8]`: a brought sentence-transformers model, once, to ONNX.

The work is retrieval.embedders.convert.convert; this is its terminal side. The gateway then embeds
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
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--int8", is_flag=True, help="int8 weights, as the built-in embedder (check retrieval holds up).")
@json_option()
def convert_cmd(src: Path, out: Path, int8: bool, as_json: bool) -> None:
    """Convert SRC (a local sentence-transformers directory) into OUT (model.onnx, tokenizer.json,
    manualqa_embedder.json), then check its vectors against sentence-transformers'.

    \b
    Needs torch, sentence-transformers and onnx here, once; the gateway then needs none of them:
      manualqa embedder convert /models/embeddinggemma-300m /models/embeddinggemma-onnx
      embedding.model = "onnx:/models/embeddinggemma-onnx"   (manualqa.toml; the next ingest re-embeds)
    """
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
