"""Stop words per language: words a question is made of that say nothing about the equipment.

Two English lists, deliberately different (issue 49 found them apart and asked why):
- ``SEARCH["en"]`` is what search drops from a question. Words that change meaning on equipment
  ("on", "off", "up", "down", "not", "no") are kept: "pump does not start" must not match "pump starts".
- ``EVIDENCE`` is what the answer's term overlap ignores (gateway.answer.citations.content_terms):
  there "not", "no", "up", "down" are noise, since a sentence is chosen by the nouns and values it
  shares with the question or the claim, and the polarity check (gateway.answer.support) reads
  negation on its own.
The other languages have one list each, used by search and by language detection.
"""

from __future__ import annotations

SEARCH_EN = frozenset(
    """
    a about above after again all am an and any are as at be because been before being below
    between both but by can could did do does doing during each few for from further had has have
    having he her here hers herself him himself his how i if into is it its itself just me more
    most my myself nor of once only or other our ours ourselves own same she should so some such
    than that the their theirs them themselves then there these they this those through to too
    under until very was we were what when where which while who whom why will with would you
    your yours yourself yourselves please tell explain describe need needs want use using used
    get gets got shall may might must also
    """.split()
)

EVIDENCE = frozenset(
    "a an the and or of to in on at for with by from is are was were be been it its this that these "
    "those as if then than so do does did can could should would will i you he she we they my your "
    "how what when where which who why there here not no yes into out up down over under about "
    "also any all each some such only just may might must have has had use used using".split()
)

_DE = """
aber alle allem allen aller alles als also am an ander andere anderen auch auf aus bei beim bin bis
bitte bist da damit dann das dass dem den denn der des dich die dies diese diesem diesen dieser dieses
dir doch dort du durch ein eine einem einen einer eines er es etwa euch euer für gibt hab habe haben
hat hatte hier ich ihr im in ins ist ja jede jedem jeden jeder jedes kann kannst können könnte man
mein meine mich mir mit muss muß müssen nach nicht noch nun nur ob oder ohne sehr sein seine sich
sie sind so soll sollte sollen über um und uns unser unter viel vom von vor wann war waren warum was
weil welche welchen welcher welches wenn wer werde werden wie wieso wird wir wo woher wohin zu zum
zur zwischen sowie bzw
"""
_FR = """
à au aux avec ce ces cet cette comme comment dans de des du elle en est et être il ils je la le les
leur lui ma mais me même mes moi mon ne nous on ou où par pas pour qu que quel quelle quels qui sa
sans se ses son sont sur ta te tes toi ton tu un une vos votre vous y d l s n c j qu est-ce
"""
_ES = """
a al algo como con cual cuál cuando cuándo de del donde dónde el él ella en entre es esta este esto
están fue ha hay la las le les lo los mas más me mi muy no nos o para pero por qué que se ser si sí
sin sobre su sus también te tiene tu un una uno y ya cómo
"""
_IT = """
a al alla alle agli ai anche che chi come con cosa da dal dalla dei del della delle di e è gli ha
hanno il in io la le lo ma mi ne nel nella non o per più quale quali quando questo questa se si sono
su sul sulla un una uno
"""
_NL = """
aan al als bij dan dat de deze die dit door een en er het hoe hij ik in is je kan kunnen maar met
naar niet nog of om ook op over te tot u uit van voor waar wat wanneer we wel wordt worden zal zijn zo
"""
_PT = """
a ao aos as com como da das de do dos e é em entre essa esse esta este eu foi há isso já mais mas me
na nas no nos não o os ou para pela pelo por qual quando que se sem ser seu sua são também um uma
"""
# Chinese question words and particles: a question's CJK run is cut at them before it is paired
# (retrieval.fts), so "电机的最大电流是多少" searches 电机 and 最大电流, not 机的 or 是多.
ZH = (
    "请问", "什么", "怎么", "怎样", "如何", "多少", "哪些", "哪个", "哪里", "是否", "为什么", "可以", "能否",
    "应该", "需要", "一下", "的", "了", "吗", "呢", "吧", "是", "在", "和", "与", "或", "及", "把", "被",
    "要", "有", "我", "你", "它", "该", "这", "那",
)
# Japanese particles and question endings, as ZH
JA = ("ですか", "ますか", "ください", "どうやって", "どのように", "何", "は", "が", "を", "に", "で", "の",
      "と", "も", "か", "ですか")

SEARCH: dict[str, frozenset[str]] = {
    "en": SEARCH_EN,
    "de": frozenset(_DE.split()),
    "fr": frozenset(_FR.split()),
    "es": frozenset(_ES.split()),
    "it": frozenset(_IT.split()),
    "nl": frozenset(_NL.split()),
    "pt": frozenset(_PT.split()),
}


def search_stopwords(language: str) -> frozenset[str]:
    """The words search drops from a question in `language`: its own list and the English one
    (technicians mix English terms into their questions; an English word list never holds a German
    noun, nor the German list an English one, so the union costs nothing)."""
    own = SEARCH.get(language, frozenset())
    return own | SEARCH_EN if own else SEARCH_EN
