"""The literal text a rule's matches all hold lets ``LinearRules`` skip RE2 on a text
that holds none of it, and its matches are replaced by a search of its own over the
text's UTF-8: each held equal to the plain way (no needles; RE2's own ``sub``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.matching.linear import LinearRules, required_texts
from otel_replay.matching.numbering import Numbering
from otel_replay.matching.profiles import PROFILES
from otel_replay.matching.rules import DROP, VolatileRule

PATTERNS = [
    r"[^<>\n]+</cwd>",
    r"(?:`|to=|\"agent_name\":\")/root\b",
    r"Wall time [0-9.]+ seconds",
    r"ab*c",
    r"x|yz",
    r"(ab)+c",
    r"tok-[A-Za-z0-9]{4,}",
    r"(?s)<a>.*?</a>",
]
PROFILE_RULES = [
    rule
    for profile in PROFILES
    for rule in profile.rules
    if isinstance(rule, VolatileRule) and rule.linear
]
FRAGMENTS = [
    "</cwd>",
    "/root",
    "`/root`",
    "to=/root ",
    "Wall time 0.3 seconds",
    "Wall time ",
    "abbbc",
    "ac",
    "x",
    "yz",
    "ababc",
    "tok-AbCd12",
    "<a>one</a>",
    "<a>",
    "# AGENTS.md",
    "# AGENTS.md instructions for /src",
    "`r1` = `/home`",
    "; cc_entrypoint=",
    ".abc; cc_entrypoint=cli",
    "plain words",
    "\n",
    "é",
    "<working_dir:1>",
]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=6).map("".join)


def test_the_texts_a_pattern_needs() -> None:
    assert required_texts(r"[^<>\n]+</cwd>") == {"</cwd>"}
    assert required_texts(r"(?:`|to=)/root\b") == {"/root"}
    assert required_texts(r"x|yz") == {"x", "yz"}
    assert required_texts(r"ab*c") == {"a"}  # b may be absent: the run stops there
    assert required_texts(r"(ab)+c") == {"c"}
    for none in (r"a?", r"(?i)abc", r"a(?i:bc)", r"[[:alpha:]]+;", r"\pL+", r"x|[0-9]"):
        assert required_texts(none) is None, none


def _without_needles(rules: list[VolatileRule]) -> LinearRules:
    plain = LinearRules(rules)
    plain.needles = None
    return plain


@settings(max_examples=100, deadline=None)
@given(texts, st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=3))
def test_substituting_with_the_needles_equals_without(text, patterns):
    rules = [VolatileRule(f"k{i}", p, linear=True) for i, p in enumerate(patterns)]
    fast, plain = LinearRules(rules), _without_needles(rules)
    a, b = Numbering(), Numbering()
    assert fast.substitute(text, a.placeholder) == plain.substitute(text, b.placeholder)
    assert a.seen == b.seen


@settings(max_examples=100, deadline=None)
@given(texts)
def test_the_profiles_rules_with_the_needles_equal_without(text):
    fast, plain = LinearRules(PROFILE_RULES), _without_needles(PROFILE_RULES)
    assert fast.needles is not None  # every profile rule shows its text
    a, b = Numbering(), Numbering()
    assert fast.substitute(text, a.placeholder) == plain.substitute(text, b.placeholder)


def _by_re2_sub(rules: LinearRules, s: str, placeholder) -> str:
    """The definition: RE2's ``sub``, each match replaced as its branch says."""

    def replace(m) -> str:
        kind = rules.kinds.get(m.lastgroup or "")
        if kind is None:
            return m.group()
        if kind == DROP:
            return ""
        return f"<{kind}>" if kind in rules.fixed else placeholder(kind, m.group())

    return rules.regex.sub(replace, s)


WIDE = [*FRAGMENTS, "ü</cwd>", "\U0001f600 Wall time 1.5 seconds", "[REDACTED:env:K]", "<id:3>"]
KINDED = [
    *PATTERNS,
    r"(?P<inner>w)all",  # a rule's own named group
    r"((t)(o))k-",  # groups in groups
    r"\x{1F600}",  # a character of four bytes
    r"é+",
]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.sampled_from(WIDE), max_size=8).map("".join),
    st.lists(
        st.tuples(st.sampled_from(KINDED), st.sampled_from(["k", DROP, "fix"])),
        min_size=1,
        max_size=4,
    ),
)
def test_the_search_of_its_own_replaces_as_re2s_sub(text, table):
    rules = [
        VolatileRule("f" if kind == "fix" else kind, pattern, linear=True, fixed=kind == "fix")
        for pattern, kind in table
    ]
    compiled = LinearRules(rules)
    compiled.needles = None
    a, b = Numbering(), Numbering()
    assert compiled.substitute(text, a.placeholder) == _by_re2_sub(compiled, text, b.placeholder)
    assert a.seen == b.seen and a.counts == b.counts
