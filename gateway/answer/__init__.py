"""One question -> one logged answer: retrieval, the evidence, prompting, constrained generation,
citation checks and support checks (pipeline.py is the entry; the others are its named parts)."""
