"""TODO.md formatting: gtd's stand-in for mdformat's character-reference pattern matches exactly what
mdformat's own pattern matches, so formatting is unchanged (only its first call is faster)."""

from __future__ import annotations

import html.entities
import random

import pytest
from mdformat.renderer import _context, _util

from gtd.workflow import markdown

ESCAPE = r"\\\g<0>"  # the replacement mdformat uses


def original_sub(text: str) -> str:
    return _util.re_char_reference().sub(ESCAPE, text)


CASES = [
    "", "plain text", "a & b", "&", "&;", "&amp;", "&amp", "&AMP;", "&amp1;", "&ampx;", "&notin;", "&not;", "&notit;",
    "&#;", "&#1;", "&#1234567;", "&#12345678;", "&#x;", "&#x1F;", "&#X1f;", "&#x1234567;", "&#xZZ;", "&bogus;",
    "&&amp;", "&amp;&lt;&gt;", "x&amp;y&#10;z&unknown;&quot;", "&nbsp &nbsp;", "&Aacute;&aacute;&AElig;",
    "tail &", "&amp;;", "&#10;&#10;", "& amp;", "&am p;", "&CounterClockwiseContourIntegral;",
]


@pytest.mark.parametrize("text", CASES)
def test_same_matches_as_mdformats_pattern(text):
    assert markdown.CharacterReferences().sub(ESCAPE, text) == original_sub(text)


def test_same_matches_on_random_text_built_from_entity_pieces():
    names = sorted({name.rstrip(";") for name in html.entities.html5})
    pieces = ["&", ";", "#", "x", "X", "1", "f", "9", " ", "a", "&#", "&#x", *random.Random(13).sample(names, 200)]
    rng = random.Random(7)
    references = markdown.CharacterReferences()
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert references.sub(ESCAPE, text) == original_sub(text), text


def test_every_entity_name_is_matched():
    references = markdown.CharacterReferences()
    for name in html.entities.html5:
        text = f"&{name.rstrip(';')};"
        assert references.sub(ESCAPE, text) == original_sub(text) == "\\" + text


def test_formatting_a_plan_is_unchanged(monkeypatch):
    # `\\&amp;` is the literal text "&amp;", which mdformat must escape again; `&amp;` is an "&".
    plan = ("# Plan &amp; more\n\n## Action items\n- [ ] Escape \\&lt;b\\&gt; and \\&#123; \\&#x1F; but not "
            "&bogus; or & alone\n  - Tests: `a &amp; b`\n* [x] done \\&notin; &notin; set\n\n## Learnings\n")
    mdformat = markdown._mdformat()
    ours = mdformat.text(plan)
    assert isinstance(_context.re_char_reference(), markdown.CharacterReferences)  # the stand-in is in place
    monkeypatch.setattr(_context, "re_char_reference", _util.re_char_reference)
    assert ours == mdformat.text(plan)
    assert all(escaped in ours for escaped in ("\\&lt;b\\&gt;", "\\&#123;", "\\&#x1F;", "\\&notin; ∉"))
    assert "&bogus;" in ours and "\\&bogus;" not in ours
    assert markdown.normalized(plan) in (plan, ours)
