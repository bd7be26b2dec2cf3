"""A non-recursive GBNF grammar as a Python regex, to test which drafts a grammar lets a model write.

llama.cpp compiles the grammar (tests check it does), but exposes no "does it accept this text"; the
citation grammar is regular, so its language is a regex. Handles what gateway.answer.grammar uses:
rule references, "literals", [classes], ( groups ), |, ?, *, + and {m,n}.
"""

from __future__ import annotations

import re

_TOKEN_RE = re.compile(r'\s*("(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|[A-Za-z][\w-]*|\{\d*,?\d*\}|[()|?*+])')


def _rules(grammar: str) -> dict[str, str]:
    rules = {}
    for line in grammar.splitlines():
        if "::=" in line:
            name, body = line.split("::=", 1)
            rules[name.strip()] = body.strip()
    return rules


def _translate(body: str, rules: dict[str, str], seen: tuple[str, ...]) -> str:
    out, pos = [], 0
    while pos < len(body.rstrip()):
        m = _TOKEN_RE.match(body, pos)
        if m is None:
            raise ValueError(f"cannot read GBNF at {body[pos:]!r}")
        tok, pos = m.group(1), m.end()
        if tok.startswith('"'):
            out.append(re.escape(tok[1:-1].encode().decode("unicode_escape")))
        elif tok.startswith("["):
            out.append(tok)  # GBNF classes are regex classes
        elif tok[0].isalpha():
            if tok in seen:
                raise ValueError(f"recursive rule {tok}")
            out.append(f"(?:{_translate(rules[tok], rules, (*seen, tok))})")
        elif tok == "(":
            out.append("(?:")
        else:
            out.append(tok)  # ) | ? * + {m,n}
    return "".join(out)


def grammar_regex(grammar: str) -> re.Pattern[str]:
    rules = _rules(grammar)
    return re.compile(_translate(rules["root"], rules, ("root",)), re.DOTALL)


def accepts(grammar: str, text: str) -> bool:
    return grammar_regex(grammar).fullmatch(text) is not None
