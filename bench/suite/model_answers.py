"""Answers with models that can read: SmolLM2 and two measurement instruments through `manualqa replay`.

The built-in SmolLM2-135M and two instruction-tuned instruments (Qwen2.5-Coder-0.5B and -1.5B
Instruct, assembled from registry packages by `train.instruments`: anonymous packaging, so never a
dependency or a default) answer the same questions through the real CLI (`manualqa replay
--profile P --mode generate`), one gateway per half (its manuals plus the two sample manuals as
distractors). On 2 cores a half takes over an hour with the 1.5B, so the runs use every 4th question
of each half (`--every`); the report says how many.

`recheck` decides again, with this checkout's support check and outcome rules, what the model wrote in
an earlier run (the logged drafts and the passages each prompt gave): a change to the check is
measured on the same drafts, without regenerating; a change to the prompt needs a new run.

    python -m bench.suite.model_answers                    # `all`: every run in RUNS, then the report
    python -m bench.suite.model_answers assemble           # the instruments and their profiles
    python -m bench.suite.model_answers run --model qwen1.5b --split dev --label before
    python -m bench.suite.model_answers recheck --model qwen1.5b --split dev --label before --as before+check
    python -m bench.suite.model_answers report             # writes docs/bench/model_answers.md
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import REPO, cores_available, cpu_id, load_avg, revision, source_tree, write_section

WORK = Path(os.environ.get("MANUALQA_MODEL_ANSWERS_WORK", "/tmp/manualqa-model-answers"))
INSTRUMENTS = Path(os.environ.get("MANUALQA_INSTRUMENTS", str(WORK / "instruments")))
RESULTS = REPO / "docs" / "bench" / "model_answers.json"  # every scored run, kept so the report survives /tmp
SPLITS = ("dev", "test", "dev2", "dev3")
ALL_SPLITS = ("dev", "test")  # what `all` runs; eval/dev2 (a second development set) is run by hand
EVERY = 4
MODELS = ("smollm2", "qwen0.5b", "qwen1.5b")
# label -> what it is (the report's legend); the runs of `all`
RUNS = {"before": "the code before issue 25's fixes (commit 3fb16c2)",
        "after": "this checkout"}
BEFORE = "3fb16c2"

_PROFILE = """\
# A measurement instrument (bench/suite/model_answers.py): never a default or a dependency.
name = "{name}"
description = "llama.cpp on the CPU with {upstream}"
target_device = "x86_64 CPU (AVX2), 2+ cores"
backend = "llamacpp"
rollback = ""

[artifact]
path = "{path}"
sha256 = "{sha256}"
source = "{upstream}"
conversion = "GGUF as found in the registry packages {packages} (concatenated by train.instruments)"
quantization = "{quantization}"

[options]
n_ctx = 4096
n_gpu_layers = 0

[generation]
max_tokens = 256
temperature = 0.0
top_p = 1.0
top_k = 40
repeat_penalty = 1.1
seed = 0
timeout_s = 600.0

[embedding]
model = "onnx:minilm-l6-int8"

[owners]
conversion = "unknown (anonymous registry packaging; measurement only)"
integration = "manualqa maintainers (bench/suite/model_answers.py)"
"""


def assemble() -> dict[str, Path]:
    """The instruments' GGUFs (assembled once) and a profile for each; SmolLM2 uses the default profile."""
    from train.instruments import INSTRUMENTS as SPECS

    profiles: dict[str, Path] = {}
    INSTRUMENTS.mkdir(parents=True, exist_ok=True)
    for model, spec in SPECS.items():
        gguf = INSTRUMENTS / spec["file"]
        provenance = INSTRUMENTS / (spec["file"] + ".PROVENANCE.json")
        if not gguf.is_file() or not provenance.is_file():
            subprocess.run([sys.executable, "-m", "train.instruments", model, "--out", str(INSTRUMENTS)],
                           cwd=REPO, check=True)
        prov = json.loads(provenance.read_text(encoding="utf-8"))
        ftype = str(prov.get("general.file_type", ""))
        quant = {"15": "Q4_K_M", "1": "F16", "0": "F32", "7": "Q8_0"}.get(ftype, f"GGUF file_type {ftype}")
        path = WORK / "profiles" / f"{model}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_PROFILE.format(name=f"instrument-{model}", upstream=spec["upstream"].split(" (")[0],
                                        path=gguf, sha256=prov["sha256"], quantization=quant,
                                        packages=f"{spec['packages'][0]} ... {spec['packages'][-1]}"),
                        encoding="utf-8")
        profiles[model] = path
    return profiles


def questions(split: str, every: int = EVERY) -> Path:
    """Every `every`-th question of the half, in order (a fixed subset, the same for every model)."""
    lines = [line for line in (REPO / "eval" / split / "questions.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    out = WORK / f"{split}-every{every}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines[::every]) + "\n", encoding="utf-8")
    return out


def _env(data: Path, code: Path) -> dict[str, str]:
    return {**os.environ, "MANUALQA_DATA": str(data), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "PYTHONPATH": str(code), "MANUALQA_INGEST__TIMEOUT_S": "1200",
            # quality is measured, not the box's patience: a 1.5B on 2 busy cores can pass the 120 s default
            "MANUALQA_ANSWER__TIMEOUT_S": "900"}


def run(model: str, split: str, label: str, code: Path, every: int = EVERY,
        extra_env: dict[str, str] | None = None) -> None:
    """Ingest the half once (the data directory is shared by every model and label), then replay."""
    data = WORK / split
    env = {**_env(data, code), **(extra_env or {})}
    if not (data / "ACTIVE").is_file():  # ingested once: a run on the same half keeps its index version
        manuals = [str(REPO / "eval" / split / "manuals"), str(REPO / "sample_manuals")]
        subprocess.run([sys.executable, "-m", "gateway", "ingest", *manuals], cwd=code, env=env, check=True)
    argv = [sys.executable, "-m", "gateway", "replay", str(questions(split, every)), "--mode", "generate",
            "--label", f"{model}:{label}"]
    if model != "smollm2":
        argv += ["--profile", str(assemble()[model])]
    subprocess.run(argv, cwd=code, env=env, check=True)


def _db(split: str) -> sqlite3.Connection:
    db = sqlite3.connect(str(WORK / split / "gateway.db"))
    db.row_factory = sqlite3.Row
    return db


def items(split: str, run_label: str) -> list[dict[str, Any]]:
    """The newest replay run with this label, as gateway.qa.metrics items (with each answer's log row)."""
    db = _db(split)
    row = db.execute("SELECT id FROM replay_runs WHERE label = ? ORDER BY id DESC LIMIT 1", [run_label]).fetchone()
    if row is None:
        return []
    out = []
    for it in db.execute("SELECT * FROM replay_items WHERE run_id = ? ORDER BY position", [row["id"]]):
        data = json.loads(it["data"])
        ans = db.execute("SELECT * FROM answers WHERE id = ?", [it["answer_id"]]).fetchone()
        result: dict[str, Any] = {"outcome": it["outcome"], "answer": it["answer"] or "", "mode": data.get("mode"),
                                  "timings": json.loads(it["timings"])}
        if ans is not None:
            result.update(citations=json.loads(ans["citations"]), support=json.loads(ans["support"]),
                          draft=ans["draft"], passages=json.loads(ans["passages"]), flags=json.loads(ans["flags"]),
                          index_version=ans["index_version"])
        out.append({"question": data["question"], "result": result,
                    "citations": json.loads(it["citations"]), "retrieved": json.loads(it["retrieved"])})
    return out


def recheck(split: str, run_label: str) -> list[dict[str, Any]]:
    """The run's answers decided again by this checkout from the same drafts and passages."""
    from gateway.answer.citations import resolve
    from gateway.answer.extractive import evidence_params, extractive_answer, similarity_scorer
    from gateway.answer.generation import Generation
    from gateway.answer.outcome import decide_outcome
    from gateway.answer.support_check import check_support
    from gateway.config import AnswerSettings
    from retrieval.embedders.base import similarity_to
    from retrieval.manifest import CHUNKS_DB
    from retrieval.types import Hit
    from retrieval.versions import IndexStore

    settings = AnswerSettings()
    fields = set(Hit.__dataclass_fields__)
    held: list[Any] = []

    def embedder() -> Any:
        """The built-in embedder (the one these gateways' indexes were built with), loaded once."""
        if not held:
            from retrieval.embedders import load_embedder

            held.append(load_embedder())
        return held[0]

    store = IndexStore(WORK / split)
    texts: dict[tuple[str, str], dict[str, Any]] = {}

    def passage(version: str, p: dict[str, Any]) -> Hit:
        """The logged hit (ids, ranks) with its text, heading and title from the index version it came from."""
        if (version, p["chunk_id"]) not in texts:
            db = sqlite3.connect(f"file:{store.open(version).path / CHUNKS_DB}?mode=ro", uri=True)
            for cid, heading, text, title in db.execute(
                    "SELECT c.chunk_id, c.heading, c.text, m.title FROM chunks c "
                    "JOIN manuals m ON m.sha256 = c.manual_sha256"):
                texts[(version, cid)] = {"heading": heading, "text": text, "title": title}
            db.close()
        return Hit(**{k: v for k, v in {**p, **texts[(version, p["chunk_id"])]}.items() if k in fields})

    out = []
    for it in items(split, run_label):
        r = dict(it["result"])
        if r.get("mode") != "generate" or r.get("outcome") not in ("answered", "evidence_only", "not_found") \
                or not r.get("draft"):
            out.append(it)  # decided before the model (not_found on weak evidence) or not by the check
            continue
        given = [passage(r["index_version"], p) for p in r["passages"] if p.get("given")]
        extra = similarity_scorer(similarity_to(embedder(), it["question"]["question"]), given,
                                  settings.sentence_similarity) if settings.sentence_similarity > 0 else None
        evidence = extractive_answer(it["question"]["question"], given, evidence_params(settings), extra=extra)
        support = check_support(it["question"]["question"], r["draft"], given, settings.min_support_overlap,
                                settings.require_question_terms, evidence=evidence,
                                decline=os.environ.get("MANUALQA_ANSWER__DECLINE", settings.decline),
                                recite_citations=os.environ.get("MANUALQA_ANSWER__RECITE_CITATIONS",
                                                                str(settings.recite_citations)).lower() == "true")
        decision = decide_outcome(generation=Generation(draft=r["draft"], text=r["draft"], hits=given),
                                  support=support)
        r["outcome"], r["support"] = decision.outcome, support.checks
        if decision.shows == "model" and support.shown is not None:
            r["answer"], cits = support.shown, support.citations
        else:
            r["answer"] = evidence if decision.shows == "evidence" else decision.notice
            cits, _ = resolve(r["answer"], given, supporting_fallback=False)
        r["citations"] = [c.to_dict() for c in cits]
        out.append({**it, "result": r, "citations": [{"manual": c.manual, "page": c.page} for c in cits],
                    "given": given})  # the passages the model read, as Hits (for experiments that reread them)
    return out


COLUMNS = (("green_rate", "green (answerable)"), ("answered_precision", "answered precision"),
           ("answer_correctness", "answer correctness"), ("false_answers", "false answers (unanswerable)"),
           ("unanswerable_not_found_rate", "unanswerable refused"), ("citation_precision", "citation precision"),
           ("prompt_tokens_p50", "prompt tokens p50"),
           ("ttft_ms_p50", "TTFT p50 ms"), ("ttft_ms_p95", "TTFT p95 ms"), ("total_ms_p50", "total p50 ms"),
           ("total_ms_p95", "total p95 ms"))


def score(split: str, model: str, label: str, scored: list[dict[str, Any]], note: str = "") -> dict[str, Any]:
    from gateway.qa.metrics import compute_metrics, percentile

    m = compute_metrics(scored)
    m["prompt_tokens_p50"] = percentile([(it["result"].get("timings") or {}).get("prompt_tokens") for it in scored], 50)
    unans = [it for it in scored if not it["question"].get("answerable")]
    m["false_answers"] = f"{sum(1 for it in unans if it['result'].get('outcome') == 'answered')} of {len(unans)}"
    return {"split": split, "model": model, "label": label, "questions": len(scored), "note": note,
            "load": load_avg(), "machine": f"{cpu_id()}, {cores_available()} cores",
            "metrics": {k: m.get(k) for k, _ in COLUMNS} | {"outcomes": m["outcomes"]}}


def record(entry: dict[str, Any]) -> None:
    """Keep the scored run in docs/bench/model_answers.json (one entry per split, model and label)."""
    rows = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else []
    rows = [r for r in rows if (r["split"], r["model"], r["label"]) != (entry["split"], entry["model"], entry["label"])]
    RESULTS.write_text(json.dumps([*rows, entry], indent=1) + "\n", encoding="utf-8")


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if v >= 100 else f"{v:.3f}"
    return str(v)


def report() -> str:
    rows = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else []
    order = {m: i for i, m in enumerate(MODELS)}
    rows.sort(key=lambda r: (SPLITS.index(r["split"]), order.get(r["model"], 9), r["label"]))
    lines = ["## Answers with capable models (`manualqa replay`, generate mode)", "",
             "SmolLM2-135M-Instruct (built in) and two measurement instruments, Qwen2.5-Coder-0.5B-Instruct "
             "and Qwen2.5-Coder-1.5B-Instruct Q4_K_M, assembled from registry packages whose packaging is "
             "anonymous (so never a dependency or a default; sha256 and source packages in each GGUF's "
             "PROVENANCE.json beside the runs). Every 4th question of each half, the same for every model; "
             "each half is one gateway holding its manuals plus the two sample manuals. green: answerable "
             "questions ending `answered`; answered precision: correct among `answered` (numbers exact, token "
             "F1 >= 0.5 otherwise; a green answer to an unanswerable question is wrong); answer correctness: "
             "over all answerable questions, evidence included; unanswerable refused: `not_found`. A "
             "`+recheck` row decides the drafts of the run it names again with this checkout's support check "
             "and outcome rules (same model text, no regeneration). Timings on 2 shared cores: the load "
             "average at the end of each run is given.", "",
             "| half | model | run | questions | " + " | ".join(h for _, h in COLUMNS)
             + " | outcomes | load | machine | how |",
             "|---|---|---|---|" + "---|" * (len(COLUMNS) + 4)]
    for r in rows:
        m = r["metrics"]
        lines.append(f"| {r['split']} | {r['model']} | {r['label']} | {r['questions']} | "
                     + " | ".join(_cell(m.get(k)) for k, _ in COLUMNS)
                     + f" | {json.dumps(m['outcomes'])} | {r['load']} | {r.get('machine', '-')}"
                     + f" | {r.get('note', '')} |")
    legend = [f"- `{k}`: {v}" for k, v in RUNS.items()]
    text = "\n".join([*lines, "", *legend])
    write_section(__spec__.name, text, argv=["report"],
                  conditions="Runs: see the docstring of `bench/suite/model_answers.py`.")
    return text


def revision_of(code: str) -> str:
    """The commit a run's code is (a revision as given, or this checkout's HEAD)."""
    if Path(code).is_dir():
        return revision(Path(code))
    return code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    sub.add_parser("all", help="every model and label on both halves, then the report (the default)")
    sub.add_parser("assemble", help="assemble the instruments and write their profiles")
    r = sub.add_parser("run")
    r.add_argument("--model", choices=MODELS, required=True)
    r.add_argument("--split", choices=SPLITS, required=True)
    r.add_argument("--label", required=True)
    r.add_argument("--code", default=str(REPO), help="checkout or git revision whose code answers")
    r.add_argument("--every", type=int, default=EVERY)
    r.add_argument("--env", action="append", default=[], help="extra NAME=VALUE for the gateway")
    c = sub.add_parser("recheck")
    c.add_argument("--model", choices=MODELS, required=True)
    c.add_argument("--split", choices=SPLITS, required=True)
    c.add_argument("--label", required=True, help="the run whose drafts are decided again")
    c.add_argument("--as", dest="as_label", required=True, help="the label of the result")
    sub.add_parser("report")
    args = ap.parse_args()
    if args.cmd == "assemble":
        print(json.dumps({k: str(v) for k, v in assemble().items()}, indent=1))
    elif args.cmd == "run":
        with source_tree(args.code) as tree:
            run(args.model, args.split, args.label, tree, args.every, dict(e.split("=", 1) for e in args.env))
        record(score(args.split, args.model, args.label, items(args.split, f"{args.model}:{args.label}"),
                     note=" ".join([f"code {revision_of(args.code)}", *args.env])))
    elif args.cmd == "recheck":
        record(score(args.split, args.model, args.as_label, recheck(args.split, f"{args.model}:{args.label}"),
                     note=f"drafts of `{args.label}` decided again by {revision_of(str(REPO))}"))
    elif args.cmd == "report":
        print(report())
    else:
        for label, code in (("before", BEFORE), ("after", str(REPO))):
            for split in ALL_SPLITS:
                for model in MODELS:
                    with source_tree(code) as tree:
                        run(model, split, label, tree)
                    record(score(split, model, label, items(split, f"{model}:{label}")))
        print(report())


if __name__ == "__main__":
    main()
