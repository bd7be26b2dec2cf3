"""The answer first: does the evidence's first sentence answer? Development halves choose, test halves report.

In extractive mode the answer a technician reads is quoted evidence (gateway/answer/extractive.py): the
best sentences of the top passages, each cited, shown with a card per passage. Issue 48 item 3 saw the
wrong sentence lead: another section's 240 C before the 245 C of "PID Tune Hotend", a pin map before
"115200 8N1", bed levelling steps out of the manual's order. This script measures, for every answerable
question of each half, what the pipeline shows first:

- first sentence holds the gold evidence: the answer's first quoted sentence holds the question's gold
  `evidence` (normalised: letters and digits only, lower case; the two share a run of at least
  MIN_SHARED characters, or the whole evidence when it is shorter), or every number of its gold `answer`
  (gateway.qa.metrics.correctness on numbers, as bench/experiments/extractive_trim.py's "first" column);
- first card on a gold page: the first citation card (renumbered as the page shows it) is a gold page of
  the gold manual;
- any sentence holds the gold evidence (what moving a sentence to the front must not lose);
- out of order: how-to answers ("how do I ...", asks_how_to) quoting two sentences of one manual against
  the manual's order; bad first: answers led by a web address, a figure caption or a contents line;
- title first: answers whose first sentence opens with its passage's section title ("Calibration First
  time use ..."); how-to cut / mid-step: how-to answers with a quoted sentence cut short ("…"), and those
  cut inside a sentence or a step (the text before the "…" ends in no sentence end and no command line).

A question the pipeline refuses (not found, before any evidence) counts as a miss in every variant (the
refusal is decided before the sentences are picked; no variant changes it). Each half is its own gateway,
ingested once by bench/experiments/unanswerable.py (cached in its folder); for each question the script
runs the pipeline's own steps up to the evidence (gateway.answer.pipeline: retrieve_for_answer,
evidence_is_strong, the named-manual order, _weakness) once, then picks the sentences under every variant
(EvidenceParams) with the same passages and the same sentence similarity (memoised), and checks on one
half that the shipped variant gives word for word the evidence the real pipeline (Services.answer) gives.

    .venv/bin/python -m bench.experiments.answer_first dev        # development halves only: the choice
    .venv/bin/python -m bench.experiments.answer_first test       # the test halves, once, with the choice
    .venv/bin/python -m bench.experiments.answer_first report     # writes docs/bench/experiments/answer_first.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable
from difflib import SequenceMatcher
from typing import Any

from bench.experiments.unanswerable import CACHE, DEV, TEST, questions, services
from bench.harness import REPO, write_section

OUT = CACHE / "answer_first"
SAMPLE = "sample"  # sample_manuals/questions.jsonl on the two sample manuals: shown, never chosen on
MIN_SHARED = 24  # characters of normalised evidence a sentence must share with it
# The shipped settings before issue 48 item 3 (gateway.answer.extractive.EvidenceParams).
# join_short_lines is the cards' quotes (gateway.answer.reflow through gateway.answer.citations.resolve).
BEFORE: dict[str, Any] = {"steps_lead": False, "avoid_bad_lead": False, "manual_order": False,
                          "named_values": False, "section_bonus": 0.0, "split_compounds": 0,
                          "join_short_lines": False, "procedure_chars": 0}
# One change at a time on top of the one before (the rows the product ships), then alternatives to the
# last row that were measured and not shipped.
STEPS: list[tuple[str, dict[str, Any]]] = [
    ("before (shipped until issue 48)", {}),
    ("+ a bullet or step leads when it is best (not for how-to)", {"steps_lead": True}),
    ("+ no web address, caption or contents line first", {"avoid_bad_lead": True}),
    ("+ how-to: steps in the manual's order", {"manual_order": True}),
    ("+ a question term set to a number is the asked value", {"named_values": True}),
    ("+ cards: a line of a word or two joined to the lower-case line after", {"join_short_lines": True}),
    ("+ how-to: sentences up to 1000 characters, cut where a sentence or step ends", {"procedure_chars": 1000}),
]
ALTERNATIVES: list[tuple[str, dict[str, Any]]] = [
    ("shipped, + value bonus 1.0 (a sentence stating the asked kind)", {"value_bonus": 1.0}),
    ("shipped, + section bonus 1.0 (question terms in the heading)", {"section_bonus": 1.0}),
    ("shipped, + section bonus 4.0", {"section_bonus": 4.0}),
    ("shipped, + compound parts in the question", {"split_compounds": 1}),
    ("shipped, + compound parts in question and sentences", {"split_compounds": 2}),
    ("shipped, best sentence never first (reading order)", {"best_first": False}),
    ("shipped, how-to sentences up to 600 characters", {"procedure_chars": 600}),
    ("shipped, how-to sentences up to 2000 characters", {"procedure_chars": 2000}),
]


Variant = tuple[str, dict[str, Any]]


def variants() -> list[Variant]:
    """(name, EvidenceParams over BEFORE) side by side: the cumulative steps, then the alternatives."""
    out: list[Variant] = []
    acc: dict[str, Any] = {}
    for name, change in STEPS:
        acc = {**acc, **change}
        out.append((name, dict(acc)))
    return out + [(name, {**acc, **change}) for name, change in ALTERNATIVES]


def norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def holds(sentence: str, q: dict[str, Any]) -> bool:
    """The sentence holds the question's gold evidence (see the module doc)."""
    from gateway.answer.claim_terms import numbers_of
    from gateway.qa.metrics import correctness

    s, ev = norm(sentence), norm(q.get("evidence") or "")
    if ev:
        need = min(MIN_SHARED, len(ev))
        m = SequenceMatcher(None, s, ev, autojunk=False).find_longest_match(0, len(s), 0, len(ev))
        if m.size >= need:
            return True
    gold = q.get("answer") or ""
    return bool(numbers_of(gold)) and correctness(sentence, gold) == 1.0


class Memo:
    """The question's similarity to sentences (the pipeline's got.similar), each text embedded once."""

    def __init__(self, similar: Callable[[list[str]], list[float]]) -> None:
        self.similar = similar
        self.seen: dict[str, float] = {}

    def __call__(self, texts: list[str]) -> list[float]:
        new = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if new:
            self.seen.update(zip(new, self.similar(new), strict=True))
        return [self.seen[t] for t in texts]


def prepared(half: str) -> tuple[list[dict[str, Any]], Any]:
    """Per answerable question: the passages given, whether it was refused, the memoised similarity; and
    the half's gateway."""
    from gateway.answer.evidence_strength import _weakness, evidence_is_strong
    from gateway.answer.pipeline import _named_first, retrieve_for_answer
    from ingest.text.languages import detect_question
    from retrieval.types import CLOSEST

    gw = services(half)
    deps = gw.answer_deps()
    s = deps.settings
    out = []
    for q in questions(half) if half != SAMPLE else _sample_questions():
        if not q.get("answerable"):
            continue
        got = retrieve_for_answer(deps, q["question"], None, None)
        strong, ev = evidence_is_strong(got.hits, s.min_similarity, got.timings.get(CLOSEST),
                                        detect_question(q["question"]))
        hits = _named_first(q["question"], got.hits, s.max_passages)[0] if s.coverage_check else got.hits
        given = hits[: s.max_passages]
        refused = _weakness(q["question"], given, strong, ev, s) is not None
        out.append({"q": q, "given": given, "refused": refused,
                    "similar": Memo(got.similar) if got.similar else None})
    return out, gw


def _sample_questions() -> list[dict[str, Any]]:
    lines = (REPO / "sample_manuals" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def shown(item: dict[str, Any], change: dict[str, Any], settings: Any) -> dict[str, Any]:
    """What the pipeline shows under one variant: the picked sentences and the cards, renumbered."""
    from gateway.answer.citations import renumber, resolve
    from gateway.answer.extractive import cited_text, evidence_params, pick_sentences, similarity_scorer

    given, q = item["given"], item["q"]
    params = dataclasses.replace(evidence_params(settings), **{**BEFORE, **change})
    extra = (similarity_scorer(item["similar"], given, settings.sentence_similarity)
             if item["similar"] is not None and settings.sentence_similarity > 0 else None)
    picked = pick_sentences(q["question"], given, params, extra=extra)
    text, _ = cited_text(picked)
    cards, _ = resolve(text, given, supporting_fallback=False, params=params)
    text = renumber(text, cards)
    return {"picked": picked, "text": text, "cards": [(c.manual, c.page) for c in cards],
            "sentences": [x for c in cards for x in c.sentences]}


_CODE_CHARS = set("<>=#$;{}|\\/")
_FIELD_RE = re.compile(r"^[^\s:]{1,24}:\s")  # "ser: Get Serial Number": a command list's line


def wrapped_breaks(sentence: str) -> int:
    """Line breaks left between two lines of prose in a card's quoted sentence ("Clean\nthe Printer"): the
    line before ends in a lower-case letter or a comma, the next opens with one, neither is code."""
    lines = sentence.split("\n")
    return sum(1 for a, b in zip(lines, lines[1:], strict=False)
               if a.strip()[-1:] in set("abcdefghijklmnopqrstuvwxyz,") and b.strip()[:1].islower()
               and not _CODE_CHARS & set(a + b) and not _FIELD_RE.match(b.strip()))


WHOLE = 10**9  # _clean's steps_within: a sentence on one line, never cut
COUNTS = ("n", "refused", "first", "page", "any", "how_to", "out_of_order", "bad_first", "wraps", "title_first",
          "cut", "mid_step")
_TITLE_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)*\.?\s*")


def title_first(picked: list[tuple[int, str]], given: list[Any]) -> bool:
    """The answer's first sentence opens with its passage's section title, with its number or without,
    and another sentence goes on from it ("Calibration First time use ..." under "4.5.2. Calibration"; not
    "Get commands are useful ..." under "get commands")."""
    if not picked:
        return False
    n, sentence = picked[0]
    heading = " ".join((given[n - 1].heading or "").split())
    low = sentence.lower()
    return any(t and low.startswith(t.lower() + " ") and sentence[len(t) + 1:][:1].isupper()
               for t in {heading, _TITLE_NUMBER_RE.sub("", heading)})


def cut_mid_step(sentence: str) -> bool:
    """A quoted sentence cut short inside a sentence or a step: the text before its "…" ends in no
    sentence end (. ! ? and the CJK ones) and is no command line's end."""
    if not sentence.endswith(" …"):
        return False
    before = sentence[:-2].rstrip()
    return before[-1:] not in set(".!?。！？；") and not re.search(r"(?:^|\s)[\w\-~/]{0,16}[>$#]\s?\S+$", before)


def measure(items: list[dict[str, Any]], change: dict[str, Any], settings: Any) -> dict[str, Any]:
    """One variant over one half's answerable questions: the counts (COUNTS) and the ids whose first
    sentence holds the gold evidence."""
    from gateway.answer.answer_first import bad_lead
    from gateway.answer.quantities import asks_how_to

    out: dict[str, Any] = {k: 0 for k in COUNTS}
    out["n"], out["first_ids"] = len(items), []
    for item in items:
        q = item["q"]
        if item["refused"]:
            out["refused"] += 1
            continue
        got = shown(item, change, settings)
        picked = got["picked"]
        gold = {(q["manual"], p) for p in q["pages"]}
        if picked and holds(picked[0][1], q):
            out["first"] += 1
            out["first_ids"].append(q["id"])
        out["page"] += bool(got["cards"]) and got["cards"][0] in gold
        out["any"] += any(holds(sentence, q) for _, sentence in picked)
        out["bad_first"] += bool(picked) and bad_lead(picked[0][1])
        out["wraps"] += sum(wrapped_breaks(x) for x in got["sentences"])
        out["title_first"] += title_first(picked, item["given"])
        if asks_how_to(q["question"]):
            out["how_to"] += 1
            out["out_of_order"] += steps_against_order(picked, item["given"])
            out["cut"] += any(sentence.endswith(" …") for _, sentence in picked)
            out["mid_step"] += any(cut_mid_step(sentence) for _, sentence in picked)
    return out


def steps_against_order(picked: list[tuple[int, str]], given: list[Any]) -> bool:
    """Two quoted steps or instructions of one section (manual and heading) in the opposite order to the
    manual's."""
    from gateway.answer.answer_first import place
    from gateway.answer.section_titles import ITEM_RE
    from gateway.answer.sentence_score import is_instruction
    from gateway.answer.sentence_text import clean_sentence as _clean
    from ingest.text.sentences import sentence_spans

    where = []
    for n, sentence in picked:
        if not (ITEM_RE.match(sentence) or is_instruction(sentence)):
            continue
        hit = given[n - 1]
        spans = sentence_spans(hit.text)
        pos = next((i for i, (a, b) in enumerate(spans)  # the span's whole text: no cap cuts it
                    if sentence.rstrip(" ….") in _clean(hit.text[a:b], WHOLE)
                    or _clean(hit.text[a:b], WHOLE) in sentence), 0)
        where.append(((hit.manual_sha256, hit.heading), place(hit, pos)))
    return any(a[0] == b[0] and a[1] > b[1] for i, a in enumerate(where) for b in where[i + 1:])


def pipeline_check(half: str, items: list[dict[str, Any]], gw: Any) -> tuple[int, int]:
    """(same, compared): the shipped variant's evidence against the real pipeline's (Services.answer,
    extractive mode) for the half's answerable questions the pipeline did not refuse."""
    same = compared = 0
    shipped = dict(variants())[shipped_name()]
    for item in items:
        if item["refused"]:
            continue
        res = gw.answer(item["q"]["question"], mode="extractive", client="replay")
        mine = shown(item, shipped, gw.answer_deps().settings)["text"]
        compared += 1
        same += mine.strip() == (res.answer or "").strip()
    return same, compared


def run(halves: tuple[str, ...], named: list[Variant], check: str | None) -> dict[str, Any]:
    """{half: {variant name: counts}}, and the pipeline check of one half."""
    out: dict[str, Any] = {}
    for half in halves:
        items, gw = prepared(half)
        settings = gw.answer_deps().settings
        out[half] = {name: measure(items, change, settings) for name, change in named}
        if half == check:
            out["_check"] = [half, *pipeline_check(half, items, gw)]
        gw.log.close()
        print(half, "measured", flush=True)
    return out


def pooled(result: dict[str, Any], halves: tuple[str, ...], name: str) -> dict[str, int]:
    return {k: sum(result[h][name].get(k, 0) for h in halves) for k in COUNTS}


def table(result: dict[str, Any], halves: tuple[str, ...], names: list[str], label: str) -> list[str]:
    """Rows: variants; columns: per half first / page, then the halves pooled with the other counts."""
    head = ("| variant | " + " | ".join(f"{h} first / page" for h in halves)
            + f" | {label} pooled: first | page | any | steps out of order | bad first | wrapped breaks "
            "| title first | how-to cut / mid-step |")
    lines = [head, "|---|" + "---|" * (len(halves) + 8)]
    for name in names:
        cells = [f"{result[h][name]['first'] / result[h][name]['n']:.3f} / "
                 f"{result[h][name]['page'] / result[h][name]['n']:.3f}" for h in halves]
        p = pooled(result, halves, name)
        n = p["n"]
        # a count an older run did not take (figures kept from before it was added): "–"
        late = any("title_first" not in result[h][name] for h in halves)
        title = "–" if late else str(p["title_first"])
        cut = "–" if late else f"{p['cut']}/{p['how_to']} / {p['mid_step']}/{p['how_to']}"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {p['first'] / n:.3f} ({p['first']}/{n}) | "
                     f"{p['page'] / n:.3f} | {p['any'] / n:.3f} | {p['out_of_order']}/{p['how_to']} | "
                     f"{p['bad_first']} | {p['wraps']} | {title} | {cut} |")
    return lines


def shipped_name() -> str:
    """The variant that is the product's EvidenceParams (the last cumulative step)."""
    return variants()[len(STEPS) - 1][0]


# The follow-up of issue 48 ("How to calibrate the actuator" led by its section's title "Calibration", its
# procedure cut at 400 characters mid-sentence), measured by this script's dev step before it (commit d4de3af,
# the shipped row's counts; title first and how-to cut counted with this script's own rules) and after.
HOW_TO_WHOLE = (
    "**A how-to's steps whole, no section title first** (after issue 48 item 3: 'How to calibrate the "
    "actuator' began with its section's title 'Calibration', whose number '4.5.2.' the sentence splitter "
    "had cut off, and its procedure was cut at 400 characters inside a sentence). Two rules, chosen on the "
    "development halves: a how-to question's sentences are quoted up to 1,000 characters and cut only where a "
    "sentence or a step ends (EvidenceParams.procedure_chars, the row '+ how-to: sentences up to 1000 "
    "characters ...'; 600 and 2,000 are the alternatives); and a sentence's first line that is its passage's "
    "section title, with the section's number or without it ('Calibration' under '4.5.2. Calibration', "
    "'Feeding' under '2. Feeding'), or any title line just after a section's number alone, is passed over "
    "(gateway.answer.section_titles; no knob: it is in every row above). Before both, at d4de3af, the shipped "
    "row on the development halves: first 0.417 (118/283), page 0.721, any 0.558, title first 3, how-to "
    "cut / mid-step 1/13 / 1/13; on the sample manuals first 0.519 (42/81), title first 7, how-to cut 3/13 "
    "/ 3/13. After: the development halves' first and page unchanged, no answer led by a section title (3 -> "
    "0) and no how-to answer cut (1 -> 0); any 0.558 -> 0.555: one question (dev-ender3-11, 'How do I swap "
    "to a different colour filament?') now scores the manual's step '2. Feeding' best once its title is "
    "passed, so the manual's numbered steps are quoted ('1. Preheat', '2. Feeding') where the Tip's 'Next, "
    "insert the new filament' was; the sample manuals' first 0.519 -> 0.531 (the actuator's calibration "
    "now holds its gold evidence whole), title first 7 -> 0, how-to cut 3 -> 0. The test halves were not "
    "run for this change.")


def report(dev: dict[str, Any], test: dict[str, Any] | None) -> str:
    names = [name for name, _ in variants()]
    before, chosen = names[0], shipped_name()
    n_dev = pooled(dev, DEV, before)["n"]
    lines = ["## The answer first (bench/experiments/answer_first.py)", "",
             "Issue 48 item 3: in extractive mode (the default) the evidence's first sentence should be the "
             "one that answers. Per answerable question, what the pipeline shows (shipped search and "
             "settings, each half its own gateway of its manuals and the two sample manuals): **first**, the "
             "share whose first quoted sentence holds the gold evidence (it shares a run of at least "
             f"{MIN_SHARED} letters and digits with the question's gold `evidence`, lower case, all else "
             "dropped, or the whole of a shorter one; or it holds every number of the gold `answer`, "
             "replay's rule for values); **page**, the share whose first card is a gold page of the gold "
             "manual; **any**, the share with the gold evidence in any quoted sentence (what reordering "
             "cannot raise); **steps out of order**: how-to questions ('how do I ...') whose quoted steps or "
             "instructions of one section (manual and heading) go against the manual's order, over how-to "
             "questions; **bad first**: "
             "answers led by a web address, a figure caption or a contents line (answer_first.bad_lead); "
             "**wrapped breaks**: line breaks between two lower-case words left in the cards' quoted "
             "sentences; **title first**: answers whose first sentence opens with its passage's section "
             "title ('Calibration First time use ...'); **how-to cut / mid-step**: how-to answers with a "
             "quoted sentence cut short ('…'), and those cut inside a sentence or a step, over how-to "
             "questions. A refused question (not found) counts as a miss; no variant changes refusals.", "",
             f"### Development halves ({', '.join(DEV)}; {n_dev} answerable questions): the choice", "",
             *table(dev, DEV, names, "dev"), ""]
    p0, p1 = pooled(dev, DEV, before), pooled(dev, DEV, chosen)
    better = [name for name in names[len(STEPS):] if pooled(dev, DEV, name)["first"] > p1["first"]]
    lines += [f"Chosen on the development halves: the last cumulative row ('{chosen}'), the product's defaults "
              f"(gateway.answer.extractive.EvidenceParams). Pooled first sentence {p0['first'] / p0['n']:.3f} -> "
              f"{p1['first'] / p1['n']:.3f}, first card on a gold page {p0['page'] / p0['n']:.3f} -> "
              f"{p1['page'] / p1['n']:.3f}. Alternatives that would lead with the gold evidence more often on "
              f"the development halves than the chosen row: {', '.join(better) if better else 'none'}.", ""]
    lines += [HOW_TO_WHOLE, ""]
    if SAMPLE in dev:
        lines += ["The sample manuals' own question set (sample_manuals/questions.jsonl; the tests' data, not used "
                  "for the choice):", "", *table(dev, (SAMPLE,), names, "sample"), ""]
    if "_check" in dev:
        half, same, compared = dev["_check"]
        lines += [f"Pipeline check: on {half}, the chosen row's evidence is word for word the real pipeline's "
                  f"(Services.answer, extractive) for {same} of {compared} answered questions.", ""]
    if test is not None:
        n_test = pooled(test, TEST, before)["n"]
        measured = [name for name in test[TEST[0]] if name in names]
        when = ("measured once with the choice" if chosen in measured else
                "measured once with an earlier choice (the rows named; the later rows were chosen on the "
                "development halves alone and not measured here)")
        lines += [f"### Test halves ({', '.join(TEST)}; {n_test} answerable questions): {when}", "",
                  *table(test, TEST, measured, "test"), ""]
    return "\n".join(lines) + "\n"


def _load(name: str) -> dict[str, Any] | None:
    path = OUT / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", nargs="?", choices=("dev", "test", "report", "all"), default="all")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.step in ("dev", "all"):
        dev = run((*DEV, SAMPLE), variants(), check="dev")
        (OUT / "dev.json").write_text(json.dumps(dev), encoding="utf-8")
    if args.step in ("test", "all"):
        named = [v for v in variants() if v[0] in (variants()[0][0], shipped_name())]
        (OUT / "test.json").write_text(json.dumps(run(TEST, named, check=None)), encoding="utf-8")
    dev_result = _load("dev")
    if dev_result is None:
        raise SystemExit("no development figures yet: run the dev step first")
    text = report(dev_result, _load("test"))
    print(text)
    if not args.no_write and args.step in ("report", "all"):
        write_section(__spec__.name, text, argv=sys.argv[1:] if argv is None else argv,
                      conditions="Indexes cached by bench/experiments/unanswerable.py in " + str(CACHE)
                      + "; figures of each step kept in " + str(OUT) + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main())
