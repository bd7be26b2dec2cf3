"""Known questions an embedder must answer right on this machine before it is searched with.

A model file that loads can still embed wrongly where it runs: on an emulated aarch64 whose CPU offered
instructions onnxruntime's int8 kernels mishandled, multilingual-e5 gave every text nearly the same vector
(a Chinese question 1.000 to its passage, 0.997 to an unrelated one) and nothing failed, so every search
was quietly ranked by noise. The conversion's own agreement check ran on the converting machine; this runs
where the model is loaded, once, at no more than a dozen short texts' cost.

Each question below is nearest to its own passage for any working sentence embedder (they share topic,
not many words), and no two passages are near-duplicates. Fails: vectors that are not finite, passages
that all look the same (COLLAPSED), or a question nearer to another one's passage.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# (question, its passage): four English pairs for any model, then Chinese and German for a multilingual one
ENGLISH = (
    ("How do I replace the blown fuse?",
     "To change the fuse, switch off the mains, open the holder cover and insert a new 5 A fuse."),
    ("What baud rate does the serial console use?",
     "The debug UART is configured for 115200 bits per second, 8 data bits, no parity."),
    ("How tight should the mounting bolts be?",
     "Tighten the four housing screws to a torque of 25 N·m in a cross pattern."),
    ("How often must the air filter be cleaned?",
     "Clean the intake filter element every 200 operating hours, or sooner in dusty sites."),
)
OTHER_LANGUAGES = (
    ("如何更换电机的保险丝？", "更换保险丝前请先断开电源，打开保险丝盒盖，装入新的5A保险丝。"),
    ("Wie oft muss das Öl gewechselt werden?", "Das Getriebeöl ist alle 500 Betriebsstunden zu wechseln."),
)
COLLAPSED = 0.97  # passages on four unrelated topics closer than this to each other: the vectors carry no text

Embed = Callable[[list[str]], np.ndarray]  # texts -> L2-normalised rows


def pairs(multilingual: bool) -> tuple[tuple[str, str], ...]:
    return ENGLISH + OTHER_LANGUAGES if multilingual else ENGLISH


def failure(queries: Embed, passages: Embed, multilingual: bool) -> str | None:
    """Why the embedder fails the known questions (None when it answers them all)."""
    known = pairs(multilingual)
    q = np.asarray(queries([question for question, _ in known]), dtype=np.float64)
    p = np.asarray(passages([passage for _, passage in known]), dtype=np.float64)
    if not (np.isfinite(q).all() and np.isfinite(p).all()):
        return "its vectors hold NaN or infinite values"
    between = p @ p.T
    closest = float(between[~np.eye(len(known), dtype=bool)].min())
    if closest > COLLAPSED:
        return (f"it gives every text nearly the same vector (passages on unrelated topics at cosine "
                f"{closest:.3f} or more to each other)")
    sims = q @ p.T
    wrong = [i for i in range(len(known)) if int(sims[i].argmax()) != i]
    if wrong:
        i = wrong[0]
        return (f"{len(wrong)} of {len(known)} known questions are nearer another question's passage "
                f"(e.g. {known[i][0]!r}: {sims[i, i]:.3f} to its own, {sims[i].max():.3f} to another)")
    return None
