"""Attack on the regex surfaces (``docs/patterns.md``, "Reliability"): three fuzzers.

``prefix``: random patterns over ``a b 1 space``; for every prefix of up to 3 characters, is
the prefix refused (``could_fullmatch`` / ``could_search``) although some continuation of up to
3 characters matches in full (exact matching, no partial matching)? Counts unsound refusals.

``prefix-raw``: the same, judged by the ``regex`` package's own ``partial=True`` on the exact
pattern (what the tracker did before).

``node``: random patterns searched in random texts by ``sdk._regex._ecma`` and by Node's
``RegExp(p, "u")``; counts disagreements, and patterns only one side refuses.

``captures``: the same, with patterns over ``a b`` dense in groups, repetitions (greedy and
lazy), backreferences and lookarounds holding groups: ECMA-262's capture semantics.

``properties``: every ``\\p{...}`` spelling of ``sdk/_regex/_properties.py`` and misspellings of
them, accepted or refused as Node does, and the code points each matches, exhaustively.

``stream``: the same patterns as a JSON Schema ``pattern`` (search) and as a ``Regex`` (full
match), streamed whole, per character and in random chunks through the trackers; counts
verdicts that differ from Node's.

Run from the repository root: ``PYTHONPATH=. python tests/fuzz/fuzz_regex.py node 2 3000``
(``KIND SEED COUNT``). ``node`` and ``stream`` need ``node`` on the PATH.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from sdk import Regex, SchemaError, SchemaViolation, TruncatedError
from sdk._regex._ecma import EcmaRegexError, compile_ecma
from sdk._trackers._field import FieldTracker
from sdk._trackers._text import TextTracker

NODE_SCRIPT = """
const fs = require('fs');
const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = cases.map(([p, subjects]) => {
  let re;
  try { re = new RegExp(p, 'u'); } catch (e) { return null; }
  return subjects.map(s => re.test(s));
});
fs.writeFileSync(process.argv[3], JSON.stringify(out));
"""

CHARS = [
    *"abB1_ \n\r\t-.",
    "\u00a0",
    "\u2028",
    "\ufeff",
    "\u3000",
    "\u00e9",
    "\u00c9",
    "\u07c0",
    "\u0967",
    "\u0085",
    "\U0001f432",
    "\u03a9",  # Greek
    "\u212a",  # KELVIN SIGN: changes when NFKC-casefolded
    "~",
]
ATOMS = [
    *"ab1_",
    "é",
    *(rf"\{c}" for c in "dDwWsS"),
    ".",
    "[a-c]",
    "[^a]",
    r"[\d_]",
    r"[^\s]",
    r"[\D1]",
    r"[^\W\d]",
    r"\u00e9",
    r"\u{1F432}",
    r"\uD83D\uDC32",
    r"\x41",
    r"\cJ",
    r"\t",
    r"\n",
    r"\.",
    r"\-",
    r"\_",
    r"\~",
    "[.]",
    r"[\b]",
    r"\p{L}",
    r"\P{L}",
    r"\p{Lu}",
    r"\p{Nd}",
    r"\p{Script=Latin}",
    r"\p{sc=Grek}",
    r"\p{scx=Greek}",
    r"\p{Lowercase}",
    r"\p{digit}",
    r"\p{CWKCF}",
    r"\P{Any}",
    r"[\p{L}\d]",
    r"[\P{Zs}a]",
    "🐲",
    "[^]",
    "[]",
    r"\0",
]
# Property names other engines read and ECMA-262 does not have: both sides must refuse them.
BAD_PROPERTIES = [
    r"\p{Greek}",
    r"\p{IsGreek}",
    r"\p{InGreek}",
    r"\p{l}",
    r"\p{Word}",
    r"\p{Digit}",
    r"\p{Block=Greek}",
    r"\p{script=Latin}",
    r"\p{Alpha=Yes}",
    r"\p{Script=Hrkt}",
]
ASSERTIONS = [
    "^",
    "$",
    r"\b",
    r"\B",
    "(?=a)",
    r"(?!\d)",
    r"(?<=\w)",
    "(?<!b)",
    "(?=(a+?))",
    r"(?<=(\w)+)",
]
QUANTS = ["", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "+?", "??"]


def node_pattern(rng: random.Random, depth: int = 0) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.15 and depth < 2:
            inner = node_pattern(rng, depth + 1)
            if rng.random() < 0.4:
                inner += "|" + node_pattern(rng, depth + 1)
            head = rng.choice(["(", "(?:", f"(?<g{rng.randint(0, 99)}>"])
            parts.append(head + inner + ")" + rng.choice(QUANTS))
        elif r < 0.3:
            parts.append(rng.choice(ASSERTIONS))
        elif r < 0.36 and "(" in "".join(parts):
            parts.append(
                rng.choice([r"\1", r"\1", r"\2"]) if "".join(parts).count("(") > 1 else r"\1"
            )
        elif 0.36 <= r < 0.37:
            parts.append(rng.choice(BAD_PROPERTIES))
        else:
            parts.append(rng.choice(ATOMS) + rng.choice(QUANTS))
    return "".join(parts)


def run_node(cases: list[list[object]]) -> list[list[bool] | None]:
    with tempfile.TemporaryDirectory() as tmp:
        script, src, dst = Path(tmp, "check.js"), Path(tmp, "in.json"), Path(tmp, "out.json")
        script.write_text(NODE_SCRIPT)
        src.write_text(json.dumps(cases))
        subprocess.run(["node", str(script), str(src), str(dst)], check=True)
        result: list[list[bool] | None] = json.loads(dst.read_text())
    return result


SEARCH_SECONDS = 2.0


def capture_pattern(rng: random.Random, depth: int = 0) -> str:
    """Patterns over ``a b`` dense in what ECMA-262's captures do: groups repeated greedily
    and lazily (so their captures are cleared per repetition, and a repetition matching ""
    is refused), backreferences before, inside and after their groups, lookarounds holding
    groups and lazy quantifiers."""
    parts: list[str] = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.35 and depth < 3:
            inner = capture_pattern(rng, depth + 1)
            if rng.random() < 0.5:
                inner += "|" + (capture_pattern(rng, depth + 1) if rng.random() < 0.7 else "")
            head = rng.choice(["(", "(", "(?:", "(?=", "(?!", "(?<=", "(?<!"])
            quant = rng.choice(CAPTURE_QUANTS) if head in ("(", "(?:") else ""
            parts.append(head + inner + ")" + quant)
        elif r < 0.55:
            parts.append(rf"\{rng.randint(1, 3)}")
        else:
            parts.append(rng.choice(["a", "b", "[ab]"]) + rng.choice(CAPTURE_QUANTS))
    return "".join(parts)


def _existing_groups(pattern: str) -> str:
    """``pattern`` with each backreference turned to one of its groups (or dropped)."""
    groups = len(re.findall(r"\((?!\?)", pattern))
    if not groups:
        return re.sub(r"\\\d", "", pattern)
    return re.sub(r"\\(\d)", lambda m: f"\\{(int(m[1]) - 1) % groups + 1}", pattern)


CAPTURE_QUANTS = ["", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "*?", "+?", "??", "{0,2}?"]


def fuzz_node(seed: int, count: int, *, captures: bool = False) -> None:
    rng = random.Random(seed)
    cases: list[list[object]] = []
    for _ in range(count):
        if captures:
            texts = ["".join(rng.choices("ab", k=rng.randint(0, 7))) for _ in range(12)]
            pattern = _existing_groups(capture_pattern(rng))
            cases.append([pattern, texts])
        else:
            texts = ["".join(rng.choices(CHARS, k=rng.randint(0, 6))) for _ in range(12)]
            cases.append([node_pattern(rng), texts])
    verdicts = run_node(cases)
    lenient = (r"\-", r"\_", r"\~")
    both = both_refuse = only_we = only_node = checks = wrong = slow = failed = 0
    for (pattern, texts), node in zip(cases, verdicts, strict=True):
        assert isinstance(pattern, str) and isinstance(texts, list)
        try:
            compiled = compile_ecma(pattern)
        except EcmaRegexError as exc:
            if node is None:
                both_refuse += 1
            else:
                only_we += 1
                print("only we refuse", repr(pattern), exc)
            continue
        if node is None:
            only_node += 1
            if not any(e in pattern for e in lenient):
                print("only node refuses", repr(pattern))
            continue
        both += 1
        for text, want in zip(texts, node, strict=True):
            checks += 1
            try:  # exponential backtracking (Node's too) is issue 29.1's: bounded here
                found = compiled._exact.search(text, timeout=SEARCH_SECONDS) is not None
            except TimeoutError:
                slow += 1
                continue
            except MemoryError:  # the regex package on some translations before issue 29.2
                failed += 1
                print("MemoryError", repr(pattern), repr(text))
                continue
            if found != want:
                wrong += 1
                print("disagree", repr(pattern), repr(text), "node:", want)
    print(
        f"node: {count} patterns, compiled by both {both}, refused by both {both_refuse}, "
        f"only we refuse {only_we}, only node refuses {only_node}; "
        f"{checks} searches, {wrong} disagreements, {slow} over {SEARCH_SECONDS} s, "
        f"{failed} MemoryError"
    )


def _chunkings(text: str, rng: random.Random) -> list[list[str]]:
    out = [[text], list(text)]
    if len(text) > 1:
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 3)))
        bounds = [0, *cuts, len(text)]
        out.append([text[a:b] for a, b in itertools.pairwise(bounds)])
    return out


def _schema_verdict(schema: dict[str, str], chunks: list[str]) -> bool:
    tracker = FieldTracker(schema)
    try:
        for chunk in chunks:
            tracker.feed(chunk)
        tracker.close()
    except SchemaViolation:
        return False
    return True


def _regex_verdict(constraint: Regex, chunks: list[str]) -> bool:
    tracker = TextTracker(constraint)
    try:
        for chunk in chunks:
            tracker.feed(chunk)
        tracker.close()
    except (SchemaViolation, TruncatedError):
        return False
    return True


def fuzz_stream(seed: int, count: int) -> None:
    rng = random.Random(seed)
    cases: list[list[object]] = []
    for _ in range(count):
        pattern = node_pattern(rng)
        texts = ["".join(rng.choices(CHARS, k=rng.randint(0, 5))) for _ in range(8)]
        cases += [[pattern, texts], [f"^(?:{pattern})$", texts]]
    verdicts = run_node(cases)
    streams = wrong = 0
    for i in range(0, len(cases), 2):
        pattern, texts = cases[i]
        search, full = verdicts[i], verdicts[i + 1]
        assert isinstance(pattern, str) and isinstance(texts, list)
        if search is None or full is None:
            continue
        schema = {"type": "string", "pattern": pattern}
        try:
            constraint = Regex(pattern)
        except SchemaError:
            continue
        for text, want_search, want_full in zip(texts, search, full, strict=True):
            for chunks in _chunkings(json.dumps(text), rng):
                streams += 1
                if _schema_verdict(schema, chunks) != want_search:
                    wrong += 1
                    print("pattern", repr(pattern), chunks, "node:", want_search)
            for chunks in _chunkings(text, rng):
                streams += 1
                if _regex_verdict(constraint, chunks) != want_full:
                    wrong += 1
                    print("Regex", repr(pattern), chunks, "node:", want_full)
    print(f"stream: {count} patterns, {streams} streams, {wrong} verdicts unlike node's")


PREFIX_ATOMS = [*"ab1 ", "[ab]", "[^a]", r"\w", r"\W", r"\d", r"\s", ".", r"[\Da]"]
PREFIX_ASSERTIONS = [r"\b", r"\B", "^", "$", "(?=a)", "(?!b)", "(?<=a)", "(?<!b)", "(?<=a+)"]
PREFIX_QUANTS = ["", "", "", "*", "+", "?", "{0,2}", "*?", "+?", "??", "{1,2}?"]


def prefix_pattern(rng: random.Random, depth: int = 0) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.2 and depth < 2:
            inner = prefix_pattern(rng, depth + 1)
            if rng.random() < 0.3:
                inner += "|" + prefix_pattern(rng, depth + 1)
            parts.append(f"({inner}){rng.choice(PREFIX_QUANTS)}")
        elif r < 0.4:
            parts.append(rng.choice(PREFIX_ASSERTIONS))
        else:
            parts.append(rng.choice(PREFIX_ATOMS) + rng.choice(PREFIX_QUANTS))
    return "".join(parts)


def _raw(method: Callable[..., object], text: str) -> bool:
    return method(text, partial=True) is not None


def fuzz_prefix(seed: int, count: int, *, raw: bool = False) -> None:
    """``raw``: judge prefixes with the ``regex`` package's own ``partial=True`` on the exact
    pattern instead (what the tracker did before), to show what the relaxed pattern fixes."""
    rng = random.Random(seed)
    words = ["".join(t) for n in range(4) for t in itertools.product("ab1 ", repeat=n)]
    cases = unsound = 0
    for _ in range(count):
        pattern = prefix_pattern(rng)
        compiled = compile_ecma(pattern)
        could_fullmatch, could_search = compiled.could_fullmatch, compiled.could_search
        if raw:
            exact = compiled._exact
            could_fullmatch = partial(_raw, exact.fullmatch)
            could_search = partial(_raw, exact.search)
        for prefix in words:
            cases += 1
            if not could_fullmatch(prefix) and any(
                compiled.fullmatch(prefix + tail) for tail in words
            ):
                unsound += 1
                print("full match refused", repr(pattern), repr(prefix))
            if not could_search(prefix) and any(compiled.search(prefix + tail) for tail in words):
                unsound += 1
                print("search refused", repr(pattern), repr(prefix))
    print(f"prefix: {count} patterns, {cases} prefixes (x2 checks), {unsound} unsound refusals")


PROPERTIES_SCRIPT = """
const fs = require('fs');
const [names, text] = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const out = names.map(n => {
  let re;
  try { re = new RegExp(`\\\\p{${n}}`, 'gu'); } catch (e) { return null; }
  const runs = [];
  for (const m of text.matchAll(re)) {
    const c = m[0].codePointAt(0);
    if (runs.length && runs[runs.length - 1][1] === c - 1) runs[runs.length - 1][1] = c;
    else runs.push([c, c]);
  }
  return runs;
});
fs.writeFileSync(process.argv[3], JSON.stringify(out));
"""


def _property_names() -> list[str]:
    """Every ``\\p{...}`` spelling of the table (each alias in each form), and for each
    canonical name some spellings ECMA-262 refuses (loose case, ``Is``/``In`` prefixes)."""
    from sdk._regex._properties import BINARY, GENERAL_CATEGORY, SCRIPT

    names: list[str] = []
    for row in GENERAL_CATEGORY:
        names += [*row, *(f"gc={a}" for a in row), f"General_Category={row[0]}"]
    for row in SCRIPT:
        for key in ("Script", "sc", "Script_Extensions", "scx"):
            names += [f"{key}={a}" for a in row]
    for row in BINARY:
        names += row
    bad = [f"{p}{n}" for n in names if "=" not in n for p in ("Is", "In")]
    bad += [n.lower() for n in names] + [n.upper() for n in names]
    bad += [n.replace("_", " ") for n in names if "_" in n] + ["Script=Hrkt", "Alpha=Yes"]
    return names + [b for b in dict.fromkeys(bad) if b not in names]


def fuzz_properties(seed: int, count: int) -> None:
    """Every property name of ``sdk/_regex/_properties.py`` and some misspellings: does Node
    accept exactly the names we accept, and do both match the same code points (the seed and
    count are unused: the check is exhaustive over U+0000..U+10FFFF less the surrogates)?"""
    del seed, count
    names = _property_names()
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    with tempfile.TemporaryDirectory() as tmp:
        script, src, dst = Path(tmp, "p.js"), Path(tmp, "in.json"), Path(tmp, "out.json")
        script.write_text(PROPERTIES_SCRIPT)
        src.write_text(json.dumps([names, text]))
        subprocess.run(["node", str(script), str(src), str(dst)], check=True)
        verdicts: list[list[list[int]] | None] = json.loads(dst.read_text())
    # The regex package may follow a later Unicode than Node's ICU: code points one side has
    # unassigned (gc=Cn) and the other assigned are left out of the comparison, and counted.
    cn = names.index("Cn")
    ours_cn = {m.start() for m in compile_ecma(r"\p{Cn}")._exact.finditer(text)}
    node_cn = {i for a, b in verdicts[cn] or [] for i in range(_index(a), _index(b) + 1)}
    newer = ours_cn ^ node_cn
    accepted = refused = unlike = differing = 0
    for name, node in zip(names, verdicts, strict=True):
        try:
            compiled = compile_ecma(f"\\p{{{name}}}")
        except EcmaRegexError:
            if node is not None:
                unlike += 1
                print("only we refuse", name)
            refused += 1
            continue
        accepted += 1
        if node is None:
            unlike += 1
            print("only node refuses", name)
            continue
        ours = {m.start() for m in compiled._exact.finditer(text)}
        theirs = {i for a, b in node for i in range(_index(a), _index(b) + 1)}
        diff = sorted((ours ^ theirs) - newer)
        if diff:
            differing += 1
            print(
                f"\\p{{{name}}}: {len(diff)} code points differ, e.g. "
                + " ".join(f"U+{ord(text[i]):04X}" for i in diff[:5])
            )
    print(
        f"properties: {len(names)} spellings, {accepted} accepted, {refused} refused, "
        f"{unlike} verdicts unlike node's; {len(newer)} code points assigned on one side only "
        f"(Unicode versions); {differing} accepted properties whose other code points differ "
        "from node's"
    )


def _index(code: int) -> int:
    """The index of a code point in the text of all code points less the surrogates."""
    return code - 0x800 if code >= 0xE000 else code


if __name__ == "__main__":
    kind, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if kind == "prefix-raw":
        fuzz_prefix(seed, count, raw=True)
    else:
        kinds = {"node": fuzz_node, "stream": fuzz_stream, "prefix": fuzz_prefix}
        kinds["properties"] = fuzz_properties
        kinds["captures"] = partial(fuzz_node, captures=True)
        kinds[kind](seed, count)
