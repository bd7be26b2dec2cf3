"""An ORT GenAI model folder checked before onnxruntime-genai sees it, and its artifact chain.

Why check first: onnxruntime-genai's errors for a half-copied folder or a swapped tokenizer are C++
messages at best; an operator needs "tokenizer.json is not this model's" and which file to fix. The
chain's source, conversion and quantization come from the folder's PROVENANCE.json (written by
deploy/convert_smollm2.py); a folder without one loads, and its chain says the origin is unrecorded.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from runtimes.base import RuntimeUnavailable, as_int, json_table

CONVERT_HINT = "build it with deploy/convert_smollm2.py"


def _json(path: Path, what: str) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RuntimeUnavailable(f"{path.parent}: no {path.name} ({what}); {CONVERT_HINT}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RuntimeUnavailable(f"{path}: not readable JSON ({what}): {exc}") from exc
    if not isinstance(data, dict):
        raise RuntimeUnavailable(f"{path}: not a JSON object ({what})")
    return data


def chat_template(folder: Path) -> str:
    """The template the tokenizer applies: chat_template.jinja, else tokenizer_config.json's."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = folder / "tokenizer_config.json"
    value = _json(config, "tokenizer settings").get("chat_template") if config.is_file() else None
    return value if isinstance(value, str) else ""


def _vocab(tokenizer: dict[str, object]) -> dict[str, int]:
    model = tokenizer.get("model") or {}
    vocab = model.get("vocab") if isinstance(model, dict) else None
    tokens: dict[str, int] = {}
    if isinstance(vocab, dict):
        tokens.update({str(k): as_int(v) for k, v in vocab.items()})
    elif isinstance(vocab, list):  # unigram: [[piece, score], ...]
        tokens.update({str(item[0]): i for i, item in enumerate(vocab) if isinstance(item, list) and item})
    added_tokens = tokenizer.get("added_tokens")
    for added in added_tokens if isinstance(added_tokens, list) else []:
        if isinstance(added, dict) and "content" in added and "id" in added:
            tokens[str(added["content"])] = as_int(added["id"])
    return tokens


def _model(config: dict[str, object]) -> dict[str, object]:
    """genai_config.json's "model" object ({} where it has none)."""
    return json_table(config.get("model"), "genai_config.json's model")


def check_folder(folder: Path) -> tuple[dict[str, object], dict[str, object] | None]:
    """genai_config.json and PROVENANCE.json (None when absent) of a usable folder; RuntimeUnavailable else."""
    if not folder.exists():
        raise RuntimeUnavailable(f"model folder not found: {folder}; {CONVERT_HINT}")
    if not folder.is_dir():
        raise RuntimeUnavailable(f"{folder} is a file; the ortgenai backend loads a model folder "
                                 "(genai_config.json, model.onnx, tokenizer.json)")
    config = _json(folder / "genai_config.json", "onnxruntime-genai's model config")
    model = _model(config)
    decoder = str(json_table(model.get("decoder"), "genai_config.json's decoder").get("filename") or "model.onnx")
    if not (folder / decoder).is_file():
        raise RuntimeUnavailable(f"{folder}: the decoder {decoder} named by genai_config.json is missing")
    tokenizer = _json(folder / "tokenizer.json", "the tokenizer")
    vocab = _vocab(tokenizer)
    size = as_int(model.get("vocab_size") or 0)
    if size and vocab and max(vocab.values()) >= size:
        raise RuntimeUnavailable(f"{folder}: tokenizer.json is not this model's: its ids reach "
                                 f"{max(vocab.values())}, the model's vocabulary has {size}")
    settings = folder / "tokenizer_config.json"
    special = _json(settings, "tokenizer settings") if settings.is_file() else {}
    eos = special.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    eos_ids = model.get("eos_token_id")
    eos_ids = eos_ids if isinstance(eos_ids, list) else [eos_ids]
    if isinstance(eos, str) and eos_ids != [None] and vocab.get(eos) not in eos_ids:
        raise RuntimeUnavailable(f"{folder}: tokenizer.json is not this model's: its end token {eos!r} is id "
                                 f"{vocab.get(eos)}, genai_config.json's eos_token_id is {model.get('eos_token_id')}")
    if not chat_template(folder).strip():
        raise RuntimeUnavailable(f"{folder}: no chat template (chat_template.jinja or tokenizer_config.json)")
    provenance = _json(folder / "PROVENANCE.json", "the conversion record") \
        if (folder / "PROVENANCE.json").is_file() else None
    return config, provenance


def chain_data(folder: Path, config: dict[str, object], provenance: dict[str, object] | None,
               files: dict[str, str]) -> dict[str, object]:
    """source -> conversion -> quantization, and the tokenizer/template, as the chain records them."""
    template = chat_template(folder)
    model = _model(config)
    tokenizer: dict[str, object] = {
        "file": "tokenizer.json", "sha256": files.get("tokenizer.json"),
        "bos_token_id": model.get("bos_token_id"), "eos_token_id": model.get("eos_token_id"),
        "vocab_size": model.get("vocab_size"), "chat_template": template,
        "chat_template_sha256": hashlib.sha256(template.encode("utf-8")).hexdigest()}
    target: dict[str, object] = {"model_type": model.get("type"), "context_length": model.get("context_length"),
                                 "config_providers": _config_providers(config)}
    if provenance is None:
        unknown = "unrecorded: the folder has no PROVENANCE.json"
        return {"source": {"origin": unknown}, "conversion": {"tool": unknown}, "quantization": {"weights": unknown},
                "tokenizer": tokenizer, "target": target}
    conversion = dict(json_table(provenance.get("conversion"), "PROVENANCE.json's conversion"))
    conversion["tools"] = provenance.get("tools")
    conversion["seed"] = provenance.get("seed")
    conversion["build_key"] = provenance.get("build_key")
    return {"source": provenance.get("source"), "conversion": conversion,
            "quantization": provenance.get("quantization"), "tokenizer": tokenizer, "target": target}


def _config_providers(config: dict[str, object]) -> list[str]:
    """The execution providers genai_config.json was built for ([] = the CPU)."""
    decoder = json_table(_model(config).get("decoder"), "genai_config.json's decoder")
    options = json_table(decoder.get("session_options"), "genai_config.json's session_options")
    provider_options = options.get("provider_options")
    found: list[str] = []
    for entry in provider_options if isinstance(provider_options, list) else []:
        if isinstance(entry, dict):
            found.extend(str(k) for k in entry)
    return found
