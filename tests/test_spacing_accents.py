"""Accents that a LaTeX PDF without T1 fonts draws as glyphs of their own ("S´election des donn´ees `a voir")
are joined to their letters at ingest, so a French or German question's words meet the manual's."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.pdf import join_spacing_accents, normalise_text

CULTIBOX = Path(__file__).resolve().parent.parent / "eval/fr-dev/manuals/cultibox_manuel_utilisation_2013.pdf"


@pytest.mark.parametrize(("raw", "joined"), [
    ("S´election des donn´ees `a voir", "Sélection des données à voir"),
    ("Fenˆetre, ˆıle", "Fenêtre, île"),
    ("fa¸cade, ¸ca", "façade, ça"),
    ("¨uber die Br¨ucke", "über die Brücke"),
    ("Espa˜na", "España"),
])
def test_an_accent_before_its_letter_joins_it(raw: str, joined: str) -> None:
    assert join_spacing_accents(raw) == joined
    assert normalise_text(raw) == joined


@pytest.mark.parametrize("raw", [
    "run `make test` and `echo hi`",  # backticks on a page without drawn accents are code
    "the ´ mark alone",
    "x¨ and ´7",
])
def test_other_text_is_left_as_it_is(raw: str) -> None:
    assert join_spacing_accents(raw) == raw


def test_the_french_latex_manual_is_read_with_its_accents() -> None:
    from ingest import parse_pdf

    parsed = parse_pdf(CULTIBOX)
    text = "\n".join(page.text for page in parsed.pages)
    assert "Sélection des données à voir" in text and "Fenêtre" in text
    assert "´" not in text and "ˆ" not in text
