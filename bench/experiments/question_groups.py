"""Does the unanswered view's grouping (gateway.records.question_groups) put paraphrases together and
keep other questions apart? Measured with the packaged embedder on technicians' wordings of the sample
manuals' topics and of questions no manual answers.

    python -m bench.experiments.question_groups

For each threshold: how many groups the greedy grouping makes of the questions below, how many
paraphrase sets end split over groups, and how many groups mix two sets. Also the lowest cosine within
a set and the highest between sets. Prints Markdown (docs/bench/experiments/question_groups.md).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Each inner list: one need, worded as different technicians would. Neighbouring sets share words on
# purpose (the piston board's baud rate and its input voltage; two printer questions).
SETS = [
    ["What baud rate does the piston board debug console use?",
     "Which baud rate is used by the debug console of the piston board?",
     "debug console speed piston board baud"],
    ["What input voltage range does the piston board accept?",
     "Which supply voltage can I feed the piston board?",
     "piston board power input volts min max"],
    ["What is the maximum print speed in mm/s?",
     "How fast can the printer print at most, in mm per second?",
     "top printing speed mm/s"],
    ["How do I level the bed?",
     "What are the steps for bed levelling?",
     "bed leveling procedure"],
    ["What is the warranty period for the piston board?",
     "How long is the piston board's warranty?",
     "piston board guarantee duration"],
    ["Where can I buy a replacement hotend nozzle?",
     "Where can I purchase a spare nozzle for the hotend?",
     "order new nozzle hotend shop"],
    ["How do I bake a sourdough bread?",
     "What is a good recipe for a sourdough loaf?",
     "sourdough bread recipe"],
]
THRESHOLDS = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8)


def main() -> None:
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    import numpy as np

    from gateway.records.question_groups import SIMILAR, QuestionVectors, group_by_similarity
    from retrieval.embedders import load_embedder

    embedder = load_embedder()
    questions = [q for s in SETS for q in s]
    label = [i for i, s in enumerate(SETS) for _ in s]
    v = QuestionVectors(embedder.encode).of(questions)
    cos = v @ v.T
    same = np.equal.outer(label, label)
    within = float(cos[same].min())
    between = float(cos[~same].max())
    i, j = np.unravel_index(np.argmax(np.where(same, -1, cos)), cos.shape)
    print("# Grouping the unanswered view's questions\n")
    print(f"`python -m bench.experiments.question_groups` with `{embedder.model_id}`: {len(questions)} questions "
          f"in {len(SETS)} sets of paraphrases (a short keyword query among each set).\n")
    print(f"- lowest cosine within a set: **{within:.2f}**; highest between sets: **{between:.2f}** "
          f"({questions[i]!r} / {questions[j]!r})\n")
    print("| threshold | groups | sets split | groups mixing sets |")
    print("|---|---|---|---|")
    for th in THRESHOLDS:
        groups = group_by_similarity(v, th)
        homes = [{g for g, m in enumerate(groups) for k in m if label[k] == s} for s in range(len(SETS))]
        split = sum(1 for h in homes if len(h) > 1)
        mixed = sum(1 for m in groups if len({label[k] for k in m}) > 1)
        mark = " (chosen)" if th == SIMILAR else ""
        print(f"| {th:.2f}{mark} | {len(groups)} | {split} | {mixed} |")
    print(f"\nThe view groups at {SIMILAR} (gateway.records.question_groups.SIMILAR), between the two: "
          "at the measured margins a need is neither split nor merged with another.")


if __name__ == "__main__":
    main()
