"""Support check: is each answer sentence backed by the passage it cites?

A small model cites the right page and then writes a wrong number, invents an accessory, or loops.
Each sentence is held against its cited passage(s):

* every number in the sentence must appear in the passage (``85 N·m`` cannot become ``2.10 Nm``),
  beside something the sentence says it is about ("every 50 hours" for the belt is not backed by
  "every 50 hours" for the nozzle),
* every code-like token (part numbers, model names, pins: ``PA13``, ``M3x8``, ``SKR``) must too,
  except an acronym the question itself uses ("PSU": the technician's word, not the manual's); a
  value with its unit glued on ("36V") is the passage's "36 V", not a code,
* enough of its content words must be found there (``min_overlap``, measured on the development
  half of the evaluation set by ``bench/experiments/answer_quality.py``); words it repeats from the
  question count too (leaving them out let wrong answers through on eval/dev),
* it must say it the same way round as the passage sentence it rests on: "Never unplug anything
  while powered" does not back "Unplugging while powered is safe" (a negation on one side only),
* and it must not be degenerate (the same word over and over), nor announce a list that never comes
  ("The full list of commands is: [1]").

A draft is read in the units the citation grammar made it write: a sentence ends at a citation that a
new sentence or numbered step follows, and a page note beside a citation ("[1] (page 6)") is no claim.
A sentence with no citation is held against every passage given; if one supports it, that passage
is attached as an inferred citation (flagged, so QA can count them). Only supported sentences are
shown as the answer; the pipeline turns an answer with none into ``evidence_only``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from gateway.answer.binding import same_polarity, unbound_numbers
from gateway.answer.citations import CITATION_RE, parse_citation_groups
from gateway.answer.claim_terms import UNIT_GLUE_RE, codes_of, fold, numbers_of, overlap_terms, without_references
from ingest.text.sentences import sentence_spans

DEFAULT_MIN_OVERLAP = 0.6
_URL_RE = re.compile(r"\b(?:https?://|www\.)\S+|\b[\w.-]+\.(?:com|org|net|io|html?)\b", re.IGNORECASE)
_LIST_MARK_RE = re.compile(r"^\s*(?:\d{1,2}[.)]|[•\-*])\s+")
_DECLINE = "The manuals do not cover this."


_META_RE = re.compile(r"^\W*(?:the|this|that|these|each|every|all)\s+"
                      r"(?:(?:above|following|given|provided|cited|quoted|previous|preceding|first|second|third|fourth|"
                      r"fifth|last|final|next|other)\s+)?"
                      r"(?:(?:user|user's|owner's|operator's|instruction|service|installation|quick\s+start)\s+)?"
                      r"(?:passages?|manuals?|documents?|guides?|"
                      r"texts?|sections?|pages?|sources?)\b(?!\s+(?:says?|states?|recommends?|requires?)\b)",
                      re.IGNORECASE)


# "(LibreVNA User Manual) mentions that lower values ...", "[2] also mentions that ...": the model naming
# its source, not the machine
_SOURCE_TALK_RE = re.compile(r"^\W*(?:\([^()]{1,80}\)\s+)?(?:also\s+)?(?:mentions?|explains?|confirms?|provides?|"
                             r"states?|describes?|says|notes?|shows?|lists?|gives?|supports?)\b", re.IGNORECASE)


# Under the citation grammar (gateway.answer.grammar) a sentence ends at its citation, end mark or not:
# "... is 1.75mm, as stated in [1] (page 6). [2] (page 4) also mentions ..." is the grammar's
# "... as stated in [1]", "(page 6). [2]", "(page 4) also mentions ... [3]". A draft is read in those
# units; a page note next to a citation ("(page 6)") is the model's decoration of it, not a claim.
_GRAMMAR_BREAK_RE = re.compile(r"\](?=[ \t]+(?:[A-Z]|[1-9]\d?[.)]\s|\((?:pages?|p\.)\s*\d))")
# Words no sentence ends in, whose object a citation cannot be: an article or determiner ("close the
# [1]"), "use" ("you should use [1]"). Before a citation they leave the value to the passage; unlike
# "is [1] VALUE", what follows is not joined to them: the grammar makes a model start a new sentence
# there, and read as one claim eval/dev's "close the [1] ESP_PROG1 jumper" (half the answer) and
# eval/test's "use [1] Rose Enclosures" (an enclosure's part number, for a glue) would pass the check.
_OBJECT_WANTED = r"the|an?|your|its|their|this|these|those|use|using"
_COPULA_CITED_RE = re.compile(r"\s(?:is|are|was|were|be|to|equals?)\s*:?\s*\[\d+(?:\s*[,;]\s*\d+)*\]$", re.IGNORECASE)
_STEP_NUMBER_RE = re.compile(r"[1-9]\d?[.)]")
_YES_NO_RE = re.compile(r"^\W*(?:yes|no)\W*$", re.IGNORECASE)
_PAGE_NOTE_RE = re.compile(r"\s*\((?:pages?|p\.)\s*\d+(?:\s*[-–,]\s*\d+)*\)", re.IGNORECASE)


def draft_spans(answer: str) -> list[tuple[int, int]]:
    """The draft's sentences: cut after each citation that a new sentence or step follows, then as
    sentence_spans cuts; a step's number ("1.") stays with its step."""
    cuts, s = [], 0
    for m in _GRAMMAR_BREAK_RE.finditer(answer):
        piece = answer[s:m.end()]
        # "Yes, [1] The boards ..." and "The pin for D3 is [1] Pin 9. [2]" are one claim each
        if not _YES_NO_RE.match(CITATION_RE.sub("", piece)) and not _COPULA_CITED_RE.search(piece):
            cuts.append(m.end())  # a piece left empty ("(page 6). [2]") is passed over by the check
            s = m.end()
    out: list[tuple[int, int]] = []
    for a, b in zip([0, *cuts], [*cuts, len(answer)], strict=True):
        held = None
        for s, e in sentence_spans(answer[a:b]):
            if _STEP_NUMBER_RE.fullmatch(answer[a + s:a + e]):
                held = a + s if held is None else held
                continue
            out.append((a + s if held is None else held, a + e))
            held = None
        if held is not None:
            out.append((held, b))
    return out


def about_the_text(sentence: str) -> bool:
    """A sentence about the passages themselves ("The passage on Cura is from ..."), not the machine,
    or one that only says where the answer is ("The suggested print specifications are found in
    Table 1"): true, backed, and nothing a technician can act on."""
    sentence = _LIST_MARK_RE.sub("", CITATION_RE.sub(" ", sentence))
    return bool(_META_RE.match(sentence) or _SOURCE_TALK_RE.match(sentence)) or points_elsewhere(sentence)


# "... are found in Table 1", "see section 4 of the manual", "refer to the datasheet"
_PLACE = (r"(?:the\s+)?(?:[\w-]+\s+)?"  # "the wiring diagram", "the following table"
          r"(?:tables?|figures?|fig\.|sections?|chapters?|appendix|appendices|pages?|diagrams?|schematics?|"
          r"pictures?|images?|drawings?|illustrations?|manual|datasheet|data\s+sheet|documentation|user\s+guide)\b")
_POINTER_RE = re.compile(
    r"\b(?:is|are|can\s+be|may\s+be|will\s+be)\s+(?:found|listed|shown|given|described|detailed|specified|"
    r"documented|explained|provided|available|included|illustrated|located)\s+(?:in|on|at|under)\s+" + _PLACE
    + r"|^\W*(?:please\s+)?(?:see|refer\s+to|consult|look\s+at)\s+" + _PLACE, re.IGNORECASE)


def points_elsewhere(sentence: str) -> bool:
    """Says where the answer is written and states nothing itself: no value beyond the pointer's own
    number ("Table 1")."""
    return _POINTER_RE.search(sentence) is not None and not numbers_of(without_references(sentence))


# "you need to follow these steps from the manual passages [1] and [2]." and no step after it
_ANNOUNCES_RE = re.compile(r"\b(?:follow(?:ing)?\s+(?:these|the\s+following|the|those)\s+steps|"
                           r"the\s+following\s+(?:steps|settings|instructions))\b", re.IGNORECASE)


# "The Lipo pack that fits the UPS is [4] (ESP32-C5-EVB layout:).", "The max sample rate is [2] MHz.": a
# citation where the value should be ("according to [1]" and "as stated in [1]" name a source)
_CITED_AS_VALUE_RE = re.compile(r"(?<!according)\s(?:is|are|was|were|be|to|equals?|" + _OBJECT_WANTED + r")\s*:?\s*"
                                r"\[\d+(?:\s*[,;]\s*\d+)*\]"
                                r"\s*(?:[^\W\d_]{1,6}\b\.?)?\s*(\([^()]*\))?\s*[.;:]?\s*$", re.IGNORECASE)


_BRACKETED_VALUE_RE = re.compile(r"\(\s*[-+~≈±]?\d[\d.,]*\s*[^\W\d_%°µ]{0,6}[%°µ]?\s*\)$")  # "(1.000)", "(40 %)"


def cited_as_value(sentence: str) -> bool:
    """The value is a citation marker, with at most a unit after it; a number (and unit) in brackets
    after it is the value ("The channel width is [2] (1.000).")."""
    for text in (sentence.rstrip(), re.sub(r"\s*\[\d+\]\s*$", "", sentence.rstrip())):  # "... is [4] (...). [1]"
        found = _CITED_AS_VALUE_RE.search(text)
        if found is not None and not (found.group(1) and _BRACKETED_VALUE_RE.match(found.group(1))):
            return True
    return False


def dangling(sentence: str, following: str) -> bool:
    """A sentence that announces what follows ("The full list of commands is:", "follow these steps
    from the passages [1] and [2].") with no list after it, or one whose value is a citation
    ("The pack that fits is [4]."): it claims nothing."""
    if cited_as_value(sentence):
        return True
    said = CITATION_RE.sub("", sentence).rstrip()
    announced = _ANNOUNCES_RE.search(said)  # "... enter the following settings: Width 230, ..." gives them
    return (said.endswith(":") or bool(announced and ":" not in said[announced.end():])) \
        and not _LIST_MARK_RE.match(following)


def degenerate(sentence: str) -> bool:
    """A looping sentence: one word three times in a row, or under half of its words distinct."""
    words = re.findall(r"[a-z0-9]+", sentence.lower())
    if len(words) >= 3 and any(words[i] == words[i + 1] == words[i + 2] for i in range(len(words) - 2)):
        return True
    return len(words) >= 12 and len(set(words)) < 0.5 * len(words)


@dataclass
class SentenceCheck:
    text: str  # the sentence as written (citation markers included)
    start: int
    end: int
    cited: list[int]  # passage numbers cited in the sentence (valid ones)
    supported_by: list[int] = field(default_factory=list)  # cited (or inferred) passages that back it
    inferred: bool = False  # no citation written; a passage that backs it was found
    recited: int = 0  # its cited passages do not back it; this other given passage does (shown cited to it)
    overlap: float = 0.0  # best share of its content words found in a backing passage
    missing: list[str] = field(default_factory=list)  # numbers / codes absent from every cited passage
    reason: str = ""  # why unsupported: number, code, subject, overlap, polarity, degenerate, no_content

    @property
    def supported(self) -> bool:
        return bool(self.supported_by)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "supported": self.supported}


_UNIT_SPACE_RE = re.compile(r"(?<=\d)\s+(?=[^\W\d_]+\b)")


def check_against(sentence: str, passage: str, min_overlap: float,
                  ignore: frozenset[str] = frozenset(), asked: frozenset[str] = frozenset()
                  ) -> tuple[bool, float, list[str], str]:
    """(supported, overlap, missing tokens, reason) for one sentence against one passage.

    The overlap counts the claim's words the question gave it too. Leaving those out (so that a
    correct paraphrase in the technician's words passes) was tried on eval/dev and let two more
    wrong answers through ("you need to modify the configuration file in Klipper" to swap filament)
    while no right one gained (docs/bench/model_answers.md): it is not done. The converse, that the
    question's words a claim repeats must be in the passage backing it (the 1.5B's "wipe the print
    bed with a soft cloth" rests on a laser cutter's bed-cleaning section), was tried on the whole of
    eval/dev: 6 greens fewer, 5 of them right (technicians' words are not the manual's): not done.
    """
    claim = _LIST_MARK_RE.sub("", CITATION_RE.sub(" ", sentence))
    folded = fold(passage)
    missing = sorted(n for n in numbers_of(claim) if n not in numbers_of(passage))
    if missing:
        return False, 0.0, missing, "number"
    words = r"[a-z0-9_\-/]+"  # "18AWG" in the passage holds the code "AWG" of "18 AWG"
    have_codes = (codes_of(passage) | set(re.findall(words, folded))
                  | set(re.findall(words, UNIT_GLUE_RE.sub(" ", folded)))
                  | codes_of(_UNIT_SPACE_RE.sub("", folded)))  # "36 V" in the passage holds "36V"
    missing = sorted(c for c in codes_of(claim) if c not in have_codes and c not in asked
                     and not ("/" in c and all(part in have_codes for part in c.split("/") if part)))  # "700D/700E"
    if missing or _URL_RE.search(claim):
        return False, 0.0, missing or _URL_RE.findall(claim), "code"
    unbound = unbound_numbers(claim, passage, ignore)
    if unbound:
        return False, 0.0, unbound, "subject"
    want = overlap_terms(claim)
    if not want:
        return False, 0.0, [], "no_content"
    overlap = len(want & overlap_terms(passage)) / len(want)
    if overlap < min_overlap:
        return False, round(overlap, 3), [], "overlap"
    if not same_polarity(claim, passage, ignore):
        return False, round(overlap, 3), [], "polarity"
    return True, round(overlap, 3), [], ""


def echoes(sentence: str, question: str) -> bool:
    """A sentence that only restates the question ("The LED blinks while sweeping [1]" to "The LED
    blinks while sweeping. Is my unit faulty?") answers nothing, however well the passage backs it."""
    sentence = CITATION_RE.sub(" ", sentence)
    if numbers_of(sentence) - numbers_of(question):  # it adds a value: "accepts 6 V to 36 V"
        return False
    said = overlap_terms(sentence)
    new = said - overlap_terms(question) - _TALK_ABOUT_TEXT
    return bool(said) and len(new) <= max(1, len(said) // 5)


# Words that talk about the passages rather than the machine: "The above passages are used to explain
# how to flash the firmware" adds nothing to "How do I flash the firmware?" but these.
_TALK_ABOUT_TEXT = overlap_terms("above following passage passages text texts section sections manual manuals "
                                 "document documents guide guides information explain explains explained "
                                 "describe describes described mention mentions mentioned provide provides "
                                 "provided show shows shown used use uses given contain contains")


def check_answer(answer: str, passages: list[str], min_overlap: float = DEFAULT_MIN_OVERLAP,
                 question: str = "", titles: str = "", recite_citations: bool = False) -> list[SentenceCheck]:
    """One SentenceCheck per sentence of ``answer``; ``passages[0]`` is passage [1]; ``titles``: the
    manuals' titles, which name the equipment but bind no value to a subject."""
    ignore = frozenset(overlap_terms(titles))
    groups = parse_citation_groups(answer)
    # the technician's own acronyms ("PSU") name what is asked about, in their words, not the manual's
    asked = frozenset(c for c in codes_of(question) if c.isalpha())
    checks: list[SentenceCheck] = []
    spans = draft_spans(answer)
    for i, (s, e) in enumerate(spans):
        text = _PAGE_NOTE_RE.sub("", answer[s:e])
        if not CITATION_RE.sub("", text).strip(" .;:,-"):
            continue  # a stray citation on its own line: it belongs to the sentence before
        cited: list[int] = []
        for gs, _ge, numbers in groups:
            if s <= gs < e:
                cited += [n for n in numbers if 1 <= n <= len(passages) and n not in cited]
        check = SentenceCheck(text=text, start=s, end=e, cited=cited)
        if degenerate(text) or about_the_text(text) or (question and echoes(text, question)):
            check.reason = "degenerate" if degenerate(text) else "meta" if about_the_text(text) else "echo"
            checks.append(check)
            continue
        if dangling(text, answer[spans[i + 1][0]:spans[i + 1][1]] if i + 1 < len(spans) else ""):
            check.reason = "dangling"  # "The full list of commands is: [1]" and no list: it claims nothing
            checks.append(check)
            continue
        candidates = cited or list(range(1, len(passages) + 1))
        reasons = []
        for n in candidates:
            ok, overlap, missing, reason = check_against(text, passages[n - 1], min_overlap, ignore, asked)
            check.overlap = max(check.overlap, overlap)
            if ok:
                check.supported_by.append(n)
            else:
                reasons.append(reason)
                check.missing = sorted(set(check.missing) | set(missing))
        if recite_citations and not check.supported_by and cited and "polarity" not in reasons \
                and (not question or addresses_question(question, text, titles)):
            check.recited = recite(text, passages, cited, min_overlap, ignore)
            check.supported_by = [check.recited] if check.recited else []
        if check.supported_by:
            check.missing, check.reason = [], ""
            if not cited:  # the best backing passage only: one inferred citation
                check.inferred = True
                check.supported_by = check.supported_by[:1]
        else:
            check.reason = Counter(reasons).most_common(1)[0][0] if reasons else "no_content"
        checks.append(check)
    return checks


RECITE_MIN_TERMS = 4


def recite(sentence: str, passages: list[str], cited: list[int], min_overlap: float,
           ignore: frozenset[str]) -> int:
    """The other given passage that backs a sentence its cited ones do not, or 0.

    A model that read the answer in passage [3] often cites [1] (the Qwen2.5-Coder-1.5B wrote the
    RVPC's 350 C iron temperature under the tools list): the claim is true and its citation is not.
    Held against the other passages with the same test, it is shown cited to the one that backs it,
    so the tap opens the right page. Never when a cited passage says the opposite (a polarity
    reject: "Yes, you can connect the USB-C" cited to the sentence that says not to), never for a
    sentence that does not touch the question (filler is not worth a corrected citation), for one
    that states a value (numbers are everywhere: a value must be backed where the model said it read
    it), or for a short fragment ("Y Stepper, 12." is backed by any contents list).
    """
    claim = CITATION_RE.sub(" ", sentence)
    if numbers_of(without_references(claim)) or len(overlap_terms(claim) - ignore) < RECITE_MIN_TERMS:
        return 0
    for n in range(1, len(passages) + 1):
        if n not in cited and check_against(sentence, passages[n - 1], min_overlap, ignore)[0]:
            return n
    return 0


# Words a question uses that say nothing about what it asks for.
_VAGUE = frozenset("need needs get make work works happen ok okay right wrong thing way go going know tell "
                   "want able please much many kind type should one onto off".split())


# A question that asks for a quantity is not answered by a sentence without a number.
_QUANTITY_RE = re.compile(
    r"\bhow (?:much|many|big|fast|far|heavy|hot|cold|wide|tall|deep|thick)\b"
    r"|\bwhat(?:'s| is| are)? (?:the )?(?:max(?:imum)? |min(?:imum)? )?(?:voltage|current|temperature|size|"
    r"torque|pressure|speed|frequency|power|rating|capacity|resolution|baud|dimensions?|weight|length|"
    r"width|height|depth|diameter|interval|range)\b",
    re.IGNORECASE)


def asks_quantity(question: str) -> bool:
    """"How much ...", "what is the voltage ...": a question a sentence without a number does not answer."""
    return _QUANTITY_RE.search(question) is not None


def addresses_question(question: str, answer: str, title: str = "") -> bool:
    """Does the answer touch what the question asks about, beyond naming the equipment?

    A passage about the right machine backs many true sentences that answer nothing ("The Fabulaser
    Mini is a 40 W laser cutter [1]" to "what coolant does it take?"). At least one of the question's
    own content words, other than the manual's title words, must be in the answer (two, when the
    question has four or more: one shared word such as "printer" is then a coincidence, not an answer);
    and a question asking for a quantity ("how much current", "what voltage") needs a number.
    """
    answer = CITATION_RE.sub(" ", answer)
    if asks_quantity(question) and not numbers_of(answer):
        return False
    named = overlap_terms(title)
    # "Agon" for the AgonLight2: the equipment's name, shortened, says nothing about what is asked
    focus = {t for t in overlap_terms(question) - named - _VAGUE
             if not (len(t) >= 4 and any(n.startswith(t) for n in named))}
    if not focus:
        return True
    return len(focus & overlap_terms(answer)) >= (1 if len(focus) <= 3 else 2)


def is_decline(answer: str) -> bool:
    return fold(answer).strip().startswith(fold(_DECLINE)[:-1])


def supported_text(answer: str, checks: list[SentenceCheck]) -> str:
    """The answer made of its supported sentences only, each once (a small model repeats itself); an
    inferred citation is written out."""
    parts: list[str] = []
    for c in checks:
        if not c.supported:
            continue
        text = c.text.strip()
        if c.recited:
            text = re.sub(r"\s+([.;:,!?])", r"\1", CITATION_RE.sub(" ", text)).rstrip()
            text = re.sub(r"\s{2,}", " ", text)
            text += f" [{c.recited}]"
        elif c.inferred:
            text = text.rstrip() + f" [{c.supported_by[0]}]"
        if text not in parts:
            parts.append(text)
    return " ".join(parts)
