"""What kind of answer a question asks for, beyond a quantity: a remedy for a symptom, a direction.

Every sentence of a wrong green answer the 1.5B instrument wrote on eval/dev2's manuals (the second
development set, whose manuals no check had been chosen on) was true: the manual backs it. It
answered nothing. "breadboard / connector hub holes clogged with plastic after printing" got "The
holes ... will likely be partially occluded by the 3D printed plastic [1]" (the manual's next
sentence says to drill them out); "mechaduino wont show up in arduino ide, cant upload" got "The
Mechaduino firmware can be edited, compiled and uploaded from the popular Arduino IDE [3]"; "which
direction do i turn the D0 servo" got "rotate the D0 servo ... to the mounting position [1]". A
technician who reports a fault wants what to do or why it happens; one who asks which way wants a
way. These are checks of the kind of answer, on any manual, like gateway.answer.quantities' units.
"""

from __future__ import annotations

import re

# A question in the form of a question: a question mark, or a question word anywhere in it
# ("closed loop acting weird, what should the lookup table look like").
_ASKS_RE = re.compile(r"\?|\b(?:what|what's|whats|how|which|why|when|where|who|whom|whose)\b"
                      r"|^\s*(?:is|are|can|could|do|does|did|should|will|would|shall|may|must|any|has|have)\b",
                      re.IGNORECASE)

# A report of a fault: "stays dead", "won't show up", "greyed out", "clogged", "audible hiss".
_FAULT_RE = re.compile(
    r"\b(?:won'?t|wont|can'?t|cant|cannot|doesn'?t|doesnt|don'?t|dont|isn'?t|isnt|aren'?t|didn'?t|not|no longer"
    r"|never|nothing|dead|stuck|clogged|blocked|jammed|greyed|grayed|hangs?|hung|freezes?|frozen|crash(?:es|ed)?"
    r"|fails?|failed|failing|fault|error|errors|broken|weird|erratic|slow|noisy|noise|hiss(?:es|ing)?|hum(?:s|ming)?"
    r"|buzz(?:es|ing)?|squeal(?:s|ing)?|silent|overheat(?:s|ing|ed)?|smok(?:e|es|ing)|leak(?:s|ing)?|loose"
    r"|flicker(?:s|ing)?|drift(?:s|ing)?|skips?|skipping|keeps? (?:resetting|rebooting|restarting|failing)"
    r"|trips?|tripping|wrong)\b",
    re.IGNORECASE)

# What answers a fault: something to do ("drill the holes out", "you need to select ...") or why it
# happens ("because ...", "caused by ...", "once the head hits the endstops, ... is disabled").
_REMEDY_RE = re.compile(
    r"\b(?:should|must|need(?:s)? to|have to|has to|try|make sure|ensure|check|replace|remove|reinstall|install"
    r"|update|upgrade|reset|restart|reboot|clean|drill|select|set|turn|press|hold|connect|disconnect|unplug|plug"
    r"|re-?solder|solder|tighten|loosen|adjust|lower|raise|increase|decrease|reduce|swap|use|disable|enable"
    r"|power[- ]cycle|fix(?:ed)?|solved?|resolved?"
    r"|because|due to|caused by|causes?|cause of|reason|since|as a result|result(?:s|ing)? (?:in|from)|means"
    r"|indicates?|if|when|once|unless|otherwise|so that|likely cause|probably)\b",
    re.IGNORECASE)


def reports_fault(question: str) -> bool:
    """A fault told, not asked ("ESP32-POE-ISO stays dead on my 24V passive PoE injector")."""
    return not _ASKS_RE.search(question) and _FAULT_RE.search(question) is not None


def answers_fault(question: str, answer: str) -> bool:
    """A reported fault is answered by a remedy or a cause; a restatement of it, or a true sentence
    about the same part, answers nothing."""
    return not reports_fault(question) or _REMEDY_RE.search(answer) is not None


_DIRECTION_ASKED_RE = re.compile(r"\b(?:which|what) (?:direction|way (?:do|should|must|to) (?:i |you |we )?"
                                 r"(?:turn|rotate|twist|spin|move|push|slide|screw))\b|\bdirection of rotation\b",
                                 re.IGNORECASE)
_ROTATION_RE = re.compile(r"\b(?:counter[- ]?clockwise|anti-?clockwise|clock-?wise|ccw|cw)\b", re.IGNORECASE)
_DIRECTION_RE = re.compile(r"\b(?:left|right|up|upwards?|down|downwards?|forwards?|backwards?|inwards?|outwards?"
                           r"|towards?|away)\b", re.IGNORECASE)


def answers_direction(question: str, answer: str) -> bool:
    """"Which direction do I turn the D0 servo for a left hand" is not answered by "for a left hand,
    rotate it to the mounting position": a way of turning, or a direction the question did not name."""
    if not _DIRECTION_ASKED_RE.search(question) or _ROTATION_RE.search(answer):
        return True
    named = {w.lower() for w in _DIRECTION_RE.findall(question)}
    return any(w.lower() not in named for w in _DIRECTION_RE.findall(answer))
