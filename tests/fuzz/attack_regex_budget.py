"""Attack on the pattern budget (issue 29, section 1; figures in ``docs/reliability.md``).

Generates patterns with ambiguous nested quantifiers (``^(a|aa)+$``, ``^(?:ab|a|b)*c$``,
``((a|a?)+)+$`` ...) and strings that almost match (``"a" * n + "!"``) or match, and streams
each as a JSON Schema ``pattern`` (search) and as a :class:`~sdk.Regex` (full match) through
the trackers, in random chunks, with ``regex_timeout=BUDGET``. For every case it records:

- the outcome: accepted, refused (:class:`~sdk.SchemaViolation` with keyword ``pattern``; for
  a ``Regex``, also :class:`~sdk.TruncatedError`: no full match, but a prefix of one), or
  :class:`~sdk.PatternTimeout` (no verdict), and never another exception;
- the verdict of an independent oracle, Node's ``RegExp`` with V8's linear-time fallback
  (``--enable-experimental-regexp-engine-on-excessive-backtracks``; without the ``u`` flag,
  which that engine does not take; the patterns are ASCII, where the two read the same);
- the longest single ``feed``/``close`` call (how long the event loop was blocked), in CPU
  time and in wall-clock time: the ``regex`` package's ``timeout`` counts the process's CPU
  time, so on a loaded machine the wall-clock time of a call is longer by the load factor.

A verdict that differs from the oracle's (a false reject or a false accept) is a failure; so
is a call that blocked much longer than the budget. Run from the repository root:
``PYTHONPATH=. python tests/fuzz/attack_regex_budget.py budget SEED COUNT [re2|no-re2]``
(needs ``node``); ``no-re2`` runs the final checks in the ``regex`` package, as without the
``re2`` extra.

``re2-node SEED COUNT``: RE2 as the tracker uses it (``sdk._regex._linear``) against Node's
``RegExp(p, "u")`` directly, on the generator of ``tests/sdk/regex/test_linear.py`` (every
construct of the subset, and the ones outside it) and strings of the characters where engines
differ: counts the patterns RE2 took, the verdicts compared, and the disagreements.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sdk import FieldTracker, PatternTimeout, Regex, SchemaViolation, TruncatedError
from sdk._trackers._text import TextTracker

BUDGET = 0.05

NODE_SCRIPT = """
const fs = require('fs');
const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
fs.writeFileSync(process.argv[3], JSON.stringify(cases.map(([p, s]) => new RegExp(p).test(s))));
"""

WORDS = ["a", "aa", "a?", "ab", "b", "aab", "a*", "ba", "(?:a|b)"]
QUANTS = ["+", "*", "{1,}", "{2,}", "+?", "*?"]


def pattern(rng: random.Random) -> str:
    """An ambiguous, backtracking-prone pattern over ``a``/``b``."""
    words = rng.sample(WORDS, rng.randint(2, 3))
    if rng.random() < 0.3:
        words[1] = words[0]  # the same word twice: (a|a)*
    group = "(" + ("?:" if rng.random() < 0.3 else "") + "|".join(words) + ")"
    body = group + rng.choice(QUANTS)
    if rng.random() < 0.3:
        body = "(" + body + ")" + rng.choice(QUANTS)
    tail = rng.choice(["$", "$", "c$", "b$", ""])
    head = rng.choice(["^", "^", ""])
    return head + body + tail


def subject(rng: random.Random) -> str:
    n = rng.randint(15, 45)
    unit = rng.choice(["a", "a", "ab", "aab"])
    core = (unit * n)[: max(n, 1)]
    return core + rng.choice(["!", "!", "c", "", "b!"])


def oracle(cases: list[tuple[str, str]]) -> list[bool]:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst, script = Path(tmp, "in.json"), Path(tmp, "out.json"), Path(tmp, "o.js")
        src.write_text(json.dumps(cases))
        script.write_text(NODE_SCRIPT)
        subprocess.run(
            [
                "node",
                "--enable-experimental-regexp-engine-on-excessive-backtracks",
                str(script),
                str(src),
                str(dst),
            ],
            check=True,
            timeout=600,
        )
        out: list[bool] = json.loads(dst.read_text())
        return out


def pieces(rng: random.Random, text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        k = rng.randint(1, 12)
        out.append(text[i : i + k])
        i += k
    return out


def run_one(kind: str, p: str, s: str, rng: random.Random) -> tuple[str, float, float]:
    """The outcome of one stream and its longest call (CPU and wall-clock seconds)."""
    longest = wall = 0.0
    tracker: FieldTracker | TextTracker
    if kind == "pattern":
        tracker = FieldTracker(
            {"type": "object", "properties": {"x": {"type": "string", "pattern": p}}},
            regex_timeout=BUDGET,
        )
        doc = json.dumps({"x": s})
    else:
        tracker = TextTracker(Regex(p), regex_timeout=BUDGET)
        doc = s
    try:
        for piece in [*pieces(rng, doc), None]:
            t, c = time.perf_counter(), time.process_time()
            try:
                if piece is None:
                    tracker.close()
                else:
                    tracker.feed(piece)
            finally:
                longest = max(longest, time.process_time() - c)
                wall = max(wall, time.perf_counter() - t)
    except PatternTimeout:
        return "timeout", longest, wall
    except SchemaViolation as exc:
        assert exc.keyword == "pattern", exc
        return "refused", longest, wall
    except TruncatedError:  # a Regex's text that is no full match, but could have become one
        return "refused", longest, wall
    return "accepted", longest, wall


def main(seed: int, count: int) -> int:
    rng = random.Random(seed)
    patterns = sorted({pattern(rng) for _ in range(count)})
    cases = [(p, subject(rng)) for p in patterns for _ in range(4)]
    want = oracle([(p, s) for p, s in cases]) + oracle([(f"^(?:{p})$", s) for p, s in cases])
    kinds = ["pattern"] * len(cases) + ["regex"] * len(cases)
    tally: dict[str, int] = {}
    wrong: list[tuple[str, str, str, str, bool]] = []
    longest = longest_wall = 0.0
    worst = ("", "")
    started = time.perf_counter()
    for kind, (p, s), expected in zip(kinds, cases + cases, want, strict=True):
        got, spent, wall = run_one(kind, p, s, random.Random(f"{seed}/{kind}/{p}/{s}"))
        longest_wall = max(longest_wall, wall)
        if spent > longest:
            longest, worst = spent, (p, s)
        key = f"{kind}:{got}"
        tally[key] = tally.get(key, 0) + 1
        if got != "timeout" and (got == "accepted") != expected:
            wrong.append((kind, p, s, got, expected))
    print(
        f"seed {seed}: {len(patterns)} patterns, {len(cases)} strings, {len(kinds)} streams "
        f"in {time.perf_counter() - started:.0f} s, regex_timeout={BUDGET}"
    )
    for key in sorted(tally):
        print(f"  {key}: {tally[key]}")
    print(
        f"  longest single call: {longest * 1000:.0f} ms CPU ({worst[0]!r} on {worst[1]!r});"
        f" longest in wall-clock time: {longest_wall * 1000:.0f} ms"
    )
    print(f"  verdicts that differ from Node's: {len(wrong)}")
    for case in wrong[:20]:
        print("   ", case)
    return 1 if wrong else 0


NODE_U_SCRIPT = """
const fs = require('fs');
const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
fs.writeFileSync(process.argv[3], JSON.stringify(cases.map(([p, subjects]) => {
  let re;
  try { re = new RegExp(p, 'u'); } catch (e) { return null; }
  return subjects.map(s => re.test(s));
})));
"""


def re2_against_node(seed: int, count: int) -> int:
    from sdk._regex._ecma import EcmaRegexError, compile_ecma
    from sdk._regex._linear import compile_linear
    from tests.sdk.regex.test_linear import _pattern, _subject

    rng = random.Random(seed)
    cases: list[tuple[str, list[str]]] = []
    outside = invalid = 0
    for _ in range(count):
        p = _pattern(rng)
        try:
            compile_ecma(p)
        except EcmaRegexError:
            invalid += 1
            continue
        if compile_linear(p) is None:
            outside += 1
            continue
        subjects = [_subject(rng) for _ in range(20)]
        cases.append((p, subjects))
    searched = [(p, subjects) for p, subjects in cases]
    whole = [(f"^(?:{p})$", subjects) for p, subjects in cases]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst, script = Path(tmp, "in.json"), Path(tmp, "out.json"), Path(tmp, "o.js")
        src.write_text(json.dumps(searched + whole))
        script.write_text(NODE_U_SCRIPT)
        subprocess.run(["node", str(script), str(src), str(dst)], check=True, timeout=600)
        want: list[list[bool] | None] = json.loads(dst.read_text())
    wrong = compared = refused = 0
    for k, (p, subjects) in enumerate(cases + cases):
        verdicts = want[k]
        if verdicts is None:  # the documented leniency (``\\-`` outside a class): Node refuses
            refused += k < len(cases)
            continue
        program = compile_linear(p)
        assert program is not None
        for s, expected in zip(subjects, verdicts, strict=True):
            got = program.fullmatch(s) if k >= len(cases) else program.search(s)
            compared += 1
            if got != expected:
                wrong += 1
                if wrong <= 20:
                    print("   ", "fullmatch" if k >= len(cases) else "search", repr(p), repr(s))
    print(
        f"seed {seed}: {count} patterns generated, {invalid} not ECMA-262, {outside} outside "
        f"RE2's subset, {len(cases)} taken by RE2 ({refused} of them refused by Node: an escaped "
        f"'-' outside a class); {compared} verdicts (search and full match) compared with "
        f"Node's RegExp(p, 'u'): {wrong} disagreements"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    if sys.argv[1] == "re2-node":
        sys.exit(re2_against_node(int(sys.argv[2]), int(sys.argv[3])))
    if sys.argv[4:] == ["no-re2"]:
        import sdk._regex._ecma

        sdk._regex._ecma.compile_linear = lambda pattern: None  # type: ignore[assignment]
    print("final checks by RE2 where it decides:", sys.argv[4:] != ["no-re2"])
    sys.exit(main(int(sys.argv[2]), int(sys.argv[3])))
