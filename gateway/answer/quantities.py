"""A question that asks for a quantity is not answered by passages that state none of that kind.

Retrieval scores cannot tell "what is the operating humidity range?" asked of a manual that gives
no humidity from one that does: both land on the right manual's specification page with the same
similarity (docs/bench/retrieval_eval.md). What does tell them apart, on any equipment manual, is
that a stated humidity is a number followed by "%", a torque a number in N·m, a weight one in kg.
So when a question plainly asks for a quantity of one of these kinds and none of the passages
given to the answer holds a number with a unit of that kind, the honest answer is "not found",
with the passages shown, rather than evidence that cannot contain the value.

The question patterns are deliberately narrow (explicit quantity words, not "size" or "flash"):
a question they miss is answered as before; one they catch wrongly would be refused. They were
chosen on eval/dev (refusing 2 of 88 answerable and 8 of 16 unanswerable questions there) and
measured once on eval/test (docs/benchmarks.md). Three wrong catches seen on eval/dev2 narrowed them
("torque mode" names a mode, "how far do I crank" a control, a resolution may be in bits): no
unanswerable question of any half lost its refusal by that. "360 degrees" is an angle, so a
temperature needs its C or F. The answer pipeline reads only the passages of the first passage's
manual for this check (gateway.answer.pipeline): with passages ranked by their best sentence, a
question about one board drew another manual's temperature into the five (eval/dev2: +2 of 15
unanswerable refused, no answerable one lost).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ingest.text.scripts import CJK
from ingest.text.terms import has_cjk

# kind -> (what the question says when it asks for it, what a passage holds when it states it)
KINDS: dict[str, tuple[str, str]] = {
    "voltage": (r"\b(voltage|volts?)\b",
                r"\d\s*(v|vac|vdc|volts?|mv|kv)\b|[(\[]\s*(v|mv|vac|vdc)\s*[)\]]"),
    "current": (r"\b(amperage|amps|current (draw|consumption|rating)|how much current|draws?|consumption)\b",
                r"\d\s*(a|ma|µa|ua|amps?|amperes?)\b|[(\[]\s*(a|ma)\s*[)\]]"),
    "power": (r"\b(wattage|watts|power (consumption|rating))\b",
              r"\d\s*(w|kw|mw|watts?|va)\b|[(\[]\s*(w|kw)\s*[)\]]"),
    "temperature": (r"\btemperatures?\b",
                    r"\d\s*(°\s*[cf]|º\s*[cf]|deg(rees?)?\s*(c|f|celsius|fahrenheit)|c|f)\b|°\s*[cf]|[℃℉]"),
    "pressure": (r"\b(pressure|psi|in bar)\b",
                 r"\d\s*(bar|psi|kpa|mpa|pa|hpa)\b|[(\[]\s*(bar|psi|kpa)\s*[)\]]"),
    "duration": (r"\b(in hours|how many hours|lifetime|life expectancy|expected life"
                 r"|how long (does|will|can|should))\b",
                 r"\d\s*(h|hrs?|hours?|min|minutes?|s|sec|seconds?|ms|[µμu]s|ns|days?|weeks?|months?|years?"
                 # German and Chinese units (not 年 or 分 alone: a year's date, a score)
                 r"|sek|sekunden?|minuten?|std|stunden?|tagen?|wochen?|monaten?|jahren?)\b"
                 r"|\d\s*(?:毫秒|秒|分钟|小时|天|个月|周)"),
    "length": (r"\b(cable length|how far(?!\s+(?:\w+\s+){0,3}(?:crank|turn|rotate|tighten|loosen|screw|push"
               r"|adjust|set|open|back|advance|raise|lower))|in (metres|meters|mm|cm)(?!/)|distance|footprint"
               r"|dimensions)\b",
               r"\d\s*(m|mm|cm|km|ft|in|inch|inches|meters?|metres?)\b|[(\[]\s*(m|mm|cm|in)\s*[)\]]"),
    "mass": (r"\b(weight|weigh|weighs|how heavy)\b",
             r"\d\s*(kg|g|lbs?|pounds?|grams?)\b|[(\[]\s*(kg|g|lbs?)\s*[)\]]"),
    "loudness": (r"\b(how loud|noise level|loudness|in db|db\(a\)|dba)\b",
                 r"\d\s*(db|dba|db\(a\))\b"),
    "frequency": (r"\b(frequency|clock speed|mhz|ghz|khz)\b",
                  r"\d\s*(hz|khz|mhz|ghz)\b"),
    "torque": (r"\b(torque|n·m|newton.metres?)\b",
               r"\d\s*(n\s*·?\s*m|nm|in-?lbs?|ft-?lbs?|kgf\s*·?\s*cm)\b"),
    "humidity": (r"\bhumidity\b", r"\d\s*%"),
    # Ω lowercases to ω (the ohm sign too), and is no word character: no \b after it
    "impedance": (r"\bimpedance\b", r"\d\s*[kmgµμ]?\s*(?:ω|ohms?\b)|[(\[]\s*[kmµμ]?(?:ω|ohms?)\s*[)\]]"),
    "memory": (r"\b(sram|ram|how much memory|memory size|flash size)\b",
               r"\d\s*(kb|mb|gb|kib|mib|gib|bytes?|kbytes|mbytes)\b"),
    # A resolution is pixels for a screen, bits for a converter or an encoder, or any unit after the
    # word itself ("resolution: 0.1 °C"); the last two are not "not stated".
    "resolution": (r"\bresolution\b", r"\d+\s*[x×]\s*\d+|\d\s*(dpi|ppi|px|pixels?|-?\s*bits?|ppr|cpr)\b"
                   r"|resolution\W{0,20}(of\W{1,3})?\d"),
}
# The same questions in Chinese and German (a compound holds the word: "Betriebstemperatur", "输入电压").
# German "Druck" is also a print and "Strom" electricity at large: only their unambiguous compounds ask.
# A Chinese quantity word asks for a value only beside a "how much" word (低功耗睡眠 is a sleep mode).
# The unit itself asks too, after its "how many" ("几伏", "多少毫安", "多少瓦"): 伏 volt, 安培/毫安 ampere,
# 瓦 watt, 公斤/千克 kilogram, 赫兹 hertz, 毫米/厘米 mm/cm, 摄氏 Celsius (not 度 alone: an angle too).
ZH_KINDS: dict[str, str] = {
    "voltage": r"电压|伏", "current": r"电流|安培|毫安", "power": r"功率|功耗|瓦", "temperature": r"温度|摄氏",
    "pressure": r"压力|气压", "duration": r"时间|寿命", "length": r"长度|距离|尺寸|毫米|厘米",
    "mass": r"重量|公斤|千克",
    "frequency": r"频率|主频|赫兹", "torque": r"扭矩|力矩", "humidity": r"湿度", "impedance": r"阻抗|欧姆",
    "memory": r"内存|存储容量",
    "resolution": r"分辨率",
}
# The "how much" asks within its own clause ("内存是什么型号，一共几颗" asks for a model and a count of
# chips, not a memory size): "是什么" only where the clause ends on it ("是什么型号" asks for a model), "几"
# not before a classifier of things counted (几颗, 几个, 几根: a count of parts).
ZH_HOW_MUCH = re.compile(r"多少|多大|多高|多长|多重|多久|几(?![颗个根块条片只台路位次种组款处])|范围|最大|最小|最高"
                         r"|最低|额定|是什么(?=\s*(?:$|[？?，,。；;！!]))")
_ZH_CLAUSES = re.compile(r"[，,。？?；;！!]")
DE_KINDS: dict[str, str] = {
    # "Spannung" is also mechanical tension ("unter Spannung", Riemen-, Vor-, Federspannung): only the electrical
    # compounds and "welche Spannung" ask for volts (also with its adjective: "welche maximale Spannung")
    "voltage": r"(?:betriebs|eingangs|ausgangs|versorgungs|nenn|netz|lade|akku|batterie|gleich|wechsel|hoch|nieder"
               r"|klein|steuer|signal|logik|referenz|speise|anschluss|motor|spitzen|leerlauf)spannung"
               r"|spannungs(?:bereich|versorgung|quelle|wert)"
               r"|(?:welche|wie viel|wieviel|wie hohe?)\s+(?:[a-zäöüß]+e[nrs]?\s+)?spannung"
               r"|\bvolt\b",
    "current": r"stromaufnahme|stromverbrauch|stromstärke|ausgangsstrom|eingangsstrom|wie viel strom|motorstrom"
               r"|spulenstrom|phasenstrom|\bampere\b",
    "power": r"leistungsaufnahme|nennleistung|wattzahl|\bwatt\b",
    "temperature": r"temperatur(?!e)",
    "pressure": r"betriebsdruck|luftdruck",
    "duration": r"wie lange|lebensdauer",
    # not "Verlängerung" (an extension lead) nor "länger" (longer)
    "length": r"(?<!ver)länge(?!r)|abstand|abmessung",
    "mass": r"gewicht|wie schwer",
    "frequency": r"frequenz",
    "torque": r"drehmoment",
    "humidity": r"feuchtigkeit",
    "impedance": r"impedanz",
    "memory": r"speichergröße|arbeitsspeicher",
    "resolution": r"auflösung",
}
# French, as German: "tension" is also a belt's or a spring's, "couple" a pair: only what asks for a value.
FR_KINDS: dict[str, str] = {
    "voltage": r"tension (?:d'alim\w*|d’alim\w*|d'entrée|d’entrée|de sortie|nominale|de fonctionnement|secteur|max\w*)"
               r"|quelle tension|plage de tension",
    "current": r"courant (?:max\w*|consommé|nominal|d'entrée|d’entrée|de sortie)|quel courant|\bampères?\b"
               r"|intensité|consommation électrique",
    "power": r"\bpuissance\b",
    "temperature": r"températures?",
    "pressure": r"\bpression\b",
    "duration": r"combien de temps|durée de vie",
    "length": r"\blongueur\b|\bencombrement\b|\bdimensions\b",
    "mass": r"\bpoids\b|combien pèse|pèse combien",
    "frequency": r"\bfréquence\b",
    "torque": r"couple de serrage",
    "humidity": r"\bhumidité\b",
    "resolution": r"\brésolution\b",
    "impedance": r"\bimpédance\b",
}
_ASKED = {kind: re.compile("|".join([q, *(extra[kind] for extra in (DE_KINDS, FR_KINDS) if kind in extra)]))
          for kind, (q, _s) in KINDS.items()}
_ASKED_ZH = {kind: re.compile(q) for kind, q in ZH_KINDS.items()}
ASKED = _ASKED  # kind -> what a question says when it asks for it (gateway.answer.coverage reads it)
# A number and its unit written against a CJK character ("12V至24V"): the unit patterns end at a word
# boundary, which a CJK character (a word character) is not, so a space is put between them first.
_CJK_AFTER_UNIT = re.compile(f"(?<=[A-Za-z0-9%°])(?=[{CJK}])")
# A quantity word naming a mode or a part ("torque mode", "temperature sensor") asks for no value.
_NOT_A_VALUE = re.compile(
    r"\b(?:torque|voltage|current|power|temperature|pressure|frequency|humidity|position|speed)\s+"
    r"(?:modes?|sensors?|probes?|loops?|control|controllers?|feedback|compensation|regulators?)\b")
_STATED = {kind: re.compile(s) for kind, (_q, s) in KINDS.items()}
# A question asking why, when or where ("when is the interior air temperature meaningful?", "temperature in the
# reports lags behind, why?", "wann ...", "warum ...") asks for a reason, a condition or a place, not a value,
# unless it also asks how much ("wie lange hält der Zug, und wo stelle ich das ein?"). Chinese clauses are read
# by ZH_HOW_MUCH instead.
_REASON_OR_PLACE = re.compile(r"\b(?:why|when|where|warum|wieso|weshalb|wann|wo|pourquoi|quand|où)\b")
_HOW_MUCH = re.compile(r"\bhow (?:much|many|long|high|hot|cold|warm|fast|big|large|far|heavy|low|often)\b"
                       r"|\bwhat(?:'s| is| are)?\s+(?:the\s+)?(?:max|min|rated|nominal)"
                       r"|\bwie (?:viel|viele|lange|hoch|hohe|groß|schnell|weit|schwer|warm|heiß|kalt|oft)\b"
                       r"|\bcombien\b|\bquelle? (?:est la |est le )?(?:valeur|plage|tension|température)")


_HOW_TO_RE = re.compile(r"^\s*(?:how (?:do|can|should|would|to)\b|what are the steps\b|steps? (?:to|for)\b)", re.I)


def asks_how_to(question: str) -> bool:
    """A question asking for a procedure ("How do I flash ...", "steps to ..."), not for a value or a fact."""
    return _HOW_TO_RE.match(question) is not None


def asked_quantities(question: str) -> list[str]:
    """The kinds of quantity the question plainly asks for ("how heavy" -> mass)."""
    low = _NOT_A_VALUE.sub(" ", question.lower())
    if not has_cjk(low) and _REASON_OR_PLACE.search(low) and not _HOW_MUCH.search(low):
        return []
    zh = [clause for clause in _ZH_CLAUSES.split(low) if ZH_HOW_MUCH.search(clause)] if has_cjk(low) else []
    return [kind for kind, pattern in _ASKED.items()
            if pattern.search(low) or kind in _ASKED_ZH and any(_ASKED_ZH[kind].search(c) for c in zh)]


def states(text: str, kind: str) -> bool:
    """Whether the text holds a number with a unit of this kind (or a unit column label like "(mm)")."""
    if has_cjk(text):
        text = _CJK_AFTER_UNIT.sub(" ", text)
    return _STATED[kind].search(text.lower()) is not None


def unstated_quantities(question: str, passages: Iterable[str]) -> list[str]:
    """The asked kinds that none of the passages states; empty when the question asks for none."""
    asked = asked_quantities(question)
    if not asked:
        return []
    texts = list(passages)
    return [kind for kind in asked if not any(states(t, kind) for t in texts)]
