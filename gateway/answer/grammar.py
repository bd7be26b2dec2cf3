"""The output grammar that makes a model cite: every sentence ends with [n] of a passage given.

A prompt only asks a small model to cite, and it often forgets or invents numbers. With a grammar
(llama.cpp GBNF, used where the backend ``accepts_grammar``) the only way to finish a sentence is a
citation of one of the passages actually in the prompt, and the only other way to answer is the
fixed sentence that says the passages do not cover the question. What the sentence claims is still
the model's: gateway.answer.support checks that against the cited passage.
"""

from __future__ import annotations

DECLINE = "The manuals do not cover this."
MAX_SENTENCES = 5
# Sentence text: no brackets (citations only), no newline, no tags; "." only before a digit ("2.5",
# "15.04"). A sentence ends where it stops: its end mark, if any, must be followed by its citation,
# so a sentence cannot end, and a new one start, without "[n]". A sentence may be a numbered step
# ("2. Set the receiver to USB mode [1]"): without that, a model that numbers a procedure's steps
# writes the numbers as citations ("follow these steps: [1] Set the receiver ... [2]").
_TEXT = r'([^\[\]\n<>.!?] | "." [0-9])'


def citation_grammar(n_passages: int, max_sentences: int = MAX_SENTENCES) -> str:
    """GBNF for an answer of 1..max_sentences cited sentences (or the decline), n_passages >= 1."""
    if n_passages < 1:
        raise ValueError("a citation grammar needs at least one passage")
    if max_sentences < 1:
        raise ValueError("max_sentences must be >= 1")
    cites = " | ".join(f'"{n}"' for n in range(1, n_passages + 1))
    more = f"(sep sentence){{0,{max_sentences - 1}}}" if max_sentences > 1 else ""
    return "\n".join([
        f"root ::= decline | sentence {more}".rstrip(),
        f'decline ::= "{DECLINE}"',
        f'sentence ::= item? [A-Z0-9"(] {_TEXT}* [.!?]? " [" cite ("," " "? cite)* "]"',
        'item ::= [1-9] [0-9]? [.)] " "',
        f"cite ::= {cites}",
        'sep ::= " " | "\\n"',
        "",
    ])
