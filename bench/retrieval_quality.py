"""Compatibility for two scripts being edited elsewhere (bench/suite/retrieval_eval.py and
bench/experiments/reranker.py import `machine_markdown` from here): the harness is its home now.
Remove this file once their imports read `from bench.harness import machine_markdown`."""

from bench.harness import machine_markdown

__all__ = ["machine_markdown"]
