"""Issue 25, item 3: what a capable model exposed in the support check.

A number must be backed together with what it is about (not beside the manual's title alone); the
question's words count like any other; a model that says the passages do not answer is recognised
even when it cites the passage it read, and shows the evidence or ends not_found (answer.decline);
a fragment left of a mostly unsupported draft is not an answer.
"""

from __future__ import annotations

from gateway.answer.binding import unbound_numbers
from gateway.answer.generation import Generation
from gateway.answer.outcome import DECLINED_TEXT, decide_outcome
from gateway.answer.support import check_answer
from gateway.answer.support_check import check_support
from retrieval.types import Hit

MAINTENANCE = ("Clean the nozzle every 50 hours of printing. Check the belt tension once a month and "
               "tighten it if it is loose.")
WIRING = "The heater cartridge connects with 18AWG silicone cable rated for 200 °C."


def _hit(text: str, n: int = 1) -> Hit:
    return Hit(chunk_id=f"c{n}", manual="m.pdf", title="Printer manual", manual_sha256="0" * 64, page=n,
               heading="Maintenance", text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.9)


def test_a_number_stated_about_something_else_is_not_support() -> None:
    assert unbound_numbers("Replace the belt every 50 hours.", MAINTENANCE) == ["50"]
    [check] = check_answer("Replace the belt every 50 hours [1].", [MAINTENANCE],
                           question="How often should I replace the belt?")
    assert not check.supported and check.reason == "subject" and check.missing == ["50"]


def test_a_number_beside_its_subject_is_support() -> None:
    assert unbound_numbers("Clean the nozzle every 50 hours.", MAINTENANCE) == []
    [check] = check_answer("Clean the nozzle every 50 hours [1].", [MAINTENANCE],
                           question="How often should the nozzle be cleaned?")
    assert check.supported


def test_a_table_row_label_on_the_line_before_binds_the_value() -> None:
    table = "Specifications\nRated input voltage\n24 V DC\nWeight\n4.5 kg"
    assert unbound_numbers("The rated input voltage is 24 V.", table) == []
    assert unbound_numbers("The heated bed needs 24 V.", table) == ["24"]


def test_the_question_words_count_like_any_other() -> None:
    """Chosen on eval/dev: leaving the question's words out of the overlap passed wrong answers."""
    question = "How do I swap to a different colour filament?"
    passage = "Klipper reads its settings from the configuration file printer.cfg."
    [check] = check_answer("To swap to a different colour filament, modify the configuration file [1].", [passage],
                           question=question)
    assert not check.supported and check.reason == "overlap"


def test_a_cited_statement_that_the_passages_do_not_say_is_not_found() -> None:
    hits = [_hit(MAINTENANCE)]
    draft = "The passages do not specify how often to replace the belt [1]."
    support = check_support("How often should I replace the belt?", draft, hits, 0.6, True, decline="not_found")
    assert support.declined and support.shown is None and "model_declined" in support.flags
    decision = decide_outcome(generation=Generation(draft=draft, text=draft, hits=hits), support=support)
    assert (decision.outcome, decision.notice) == ("not_found", DECLINED_TEXT)


def test_a_decline_beside_a_backed_answer_is_an_answer() -> None:
    hits = [_hit(MAINTENANCE)]
    draft = "The manual does not state a belt interval. Check the belt tension once a month [1]."
    support = check_support("How often should I check the belt?", draft, hits, 0.6, True)
    assert not support.declined and support.shown == "Check the belt tension once a month [1]."


def test_a_decline_shows_the_evidence_unless_the_gateway_says_not_found() -> None:
    hits = [_hit(MAINTENANCE)]
    q = "How often should I replace the belt?"
    draft = "The manuals do not cover this."
    assert not check_support(q, draft, hits, 0.6, True).declined  # answer.decline = "evidence" (default)
    evidence = "Check the belt tension once a month and tighten it if it is loose. [1]"
    assert not check_support(q, draft, hits, 0.6, True, evidence=evidence, decline="auto").declined
    assert check_support(q, draft, hits, 0.6, True, evidence="Clean the nozzle every 50 hours. [1]",
                         decline="auto").declined  # evidence that does not touch the question


def test_a_fragment_left_of_a_mostly_unsupported_draft_is_not_an_answer() -> None:
    hits = [_hit(MAINTENANCE)]
    draft = ("Replace the belt every 50 hours [1]. Use belt part B-200 [1]. "
             "Check the belt tension once a month [1].")
    support = check_support("How often should I replace the belt?", draft, hits, 0.6, True)
    assert support.shown is None and "mostly_unsupported" in support.flags


def test_the_title_names_the_equipment_but_binds_no_value() -> None:
    passage = "Fabulaser Mini\nPower\nThe supply needs 220 V mains."
    [check] = check_answer("The Fabulaser Mini laser tube is rated 220 V [1].", [passage],
                           titles="Fabulaser Mini")
    assert not check.supported and check.reason == "subject"
    [fine] = check_answer("The Fabulaser Mini supply needs 220 V [1].", [passage], titles="Fabulaser Mini")
    assert fine.supported


CHILLER = ("13. MAINTENANCE\n• Check the status of the filter; if it is black it is required to change at "
           "least the prefilter\n• The linear guides need lubrication (once in 3 month), lithium grease can be "
           "applied with a napkin.\n• Change the water of the chiller after one year of normal use, or 6 months "
           "of intensive usage")


def test_the_bullet_before_a_value_does_not_bind_it() -> None:
    # 'change ... the prefilter' in one bullet bound 'once in 3 month' of the next to the chiller's coolant
    assert unbound_numbers("The coolant change interval for the chiller is 3 months.", CHILLER) == ["3"]
    [check] = check_answer("The coolant change interval for the chiller is 3 months. [1]", [CHILLER],
                           question="coolant change interval for the chiller")
    assert not check.supported and check.reason == "subject"
    # the value of the chiller's own bullet is bound to it
    assert unbound_numbers("Change the chiller water after 6 months of intensive use.", CHILLER) == []
