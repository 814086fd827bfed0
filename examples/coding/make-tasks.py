"""Seeded generator of the coding tasks: small Python repositories with one bug each, a visible failing test under
tests/ (protected: the agent must fix the code, not the test) and hidden tests the runner writes into the workdir
only after the agent exited (task.hidden). Train and held-out tasks come from disjoint parameters.

Two levels, half of each split (task kind `hinted` / `bare`): a bare task shows the code and the failing assertion;
a hinted one also names the line to replace and its replacement, so the agent only has to write the command. The
base SmolLM2-135M solves no bare task greedily; the hinted ones are where it first succeeds (examples/README.md).

Held-out set b (eval-b.jsonl) uses other bug families, file names and wording than train and eval; set c
(eval-c.jsonl) too, with bug lines a plain sed takes as written (set b's mostly need escaping).
train-varied.jsonl and train-mixed.jsonl are the hinted level in other wordings (four templates; every slot of the
instructions drawn on its own), with bug lines a plain sed cannot take as written.

Run: python3 examples/coding/make-tasks.py --seed 7 --train 48 --eval 24 --eval-b 24 --eval-c 24 --out examples/coding/tasks
"""

import argparse
import json
import random
from pathlib import Path

# (name, buggy body, fixed body, visible case, hidden cases); {k} is the task's parameter.
FAMILIES = [
    (
        "add_{k}",
        "return x + {k1}",
        "return x + {k}",
        ("{k}", "2 * {k}"),
        [("0", "{k}"), ("-{k}", "0"), ("100", "100 + {k}")],
    ),
    (
        "sub_{k}",
        "return x + {k}",
        "return x - {k}",
        ("{k}", "0"),
        [("0", "-{k}"), ("2 * {k}", "{k}"), ("100", "100 - {k}")],
    ),
    (
        "is_multiple_of_{k}",
        "return x % {k} == 1",
        "return x % {k} == 0",
        ("{k}", "True"),
        [("2 * {k}", "True"), ("{k} + 1", "False"), ("0", "True")],
    ),
    (
        "bigger",
        "return a if a < b else b",
        "return a if a > b else b",
        ("{k}, 1", "{k}"),
        [("1, {k}", "{k}"), ("-{k}, 0", "0"), ("{k}, {k}", "{k}")],
    ),
    (
        "smaller",
        "return a if a > b else b",
        "return a if a < b else b",
        ("{k}, 1", "1"),
        [("1, {k}", "1"), ("-{k}, 0", "-{k}"), ("{k}, {k}", "{k}")],
    ),
    ("times_{k}", "return x + {k}", "return x * {k}", ("3", "3 * {k}"), [("0", "0"), ("1", "{k}"), ("-2", "-2 * {k}")]),
    (
        "shout",
        "return word.lower() + '{bang}'",
        "return word.upper() + '{bang}'",
        ("'hi'", "'HI{bang}'"),
        [("'ok'", "'OK{bang}'"), ("''", "'{bang}'"), ("'Ab'", "'AB{bang}'")],
    ),
    (
        "length_plus_{k}",
        "return len(s) - {k}",
        "return len(s) + {k}",
        ("'abc'", "3 + {k}"),
        [("''", "{k}"), ("'a'", "1 + {k}"), ("'hello'", "5 + {k}")],
    ),
]
MODULES = ["calc", "mathlib", "helpers", "arith", "tools", "core", "ops", "mylib"]
BANGS = ["!", "?", "!!", "."]

# Held-out set b (eval-b.jsonl): operations, file names and wording that training never shows, so a gain there is the
# skill (read the failing check, write the one-line fix as a command), not the task template.
FAMILIES_B = [
    ("square", "return x * 2", "return x * x", ("3", "9"), [("0", "0"), ("-2", "4"), ("{k}", "{k} * {k}")]),
    ("negate", "return x", "return -x", ("{k}", "-{k}"), [("0", "0"), ("-{k}", "{k}"), ("1", "-1")]),
    (
        "mod_{k}",
        "return x // {k}",
        "return x % {k}",
        ("{k} + 3", "3"),
        [("{k}", "0"), ("2 * {k} + 1", "1"), ("5", "5")],
    ),
    (
        "first_char",
        "return s[-1]",
        "return s[0]",
        ("'abc'", "'a'"),
        [("'xyz'", "'x'"), ("'q'", "'q'"), ("'z{bang}'", "'z'")],
    ),
]
MODULES_B = ["utils", "numbers", "funcs", "library", "compute", "logic"]

# Held-out set c (eval-c.jsonl): like set b, operations, file names and wording that no training task has, but every
# bug and fixed line is one a plain `sed 's/old/new/'` takes as written. Three of set b's four families need sed's
# special characters escaped (`*`, `[`, `/`), so set b measures two skills at once; set c measures the first alone.
FAMILIES_C = [
    ("double", "return x + 2", "return x + x", ("{k}", "2 * {k}"), [("0", "0"), ("-3", "-6"), ("1", "2")]),
    ("absolute", "return x", "return abs(x)", ("-{k}", "{k}"), [("0", "0"), ("{k}", "{k}"), ("-1", "1")]),
    (
        "is_positive",
        "return x < 0",
        "return x > 0",
        ("{k}", "True"),
        [("0", "False"), ("-{k}", "False"), ("1", "True")],
    ),
    ("last_digit", "return x % 100", "return x % 10", ("123", "3"), [("7", "7"), ("{k}0", "0"), ("45", "5")]),
    (
        "total",
        "return a - b",
        "return a + b",
        ("{k}, 2", "{k} + 2"),
        [("0, 0", "0"), ("1, {k}", "1 + {k}"), ("-{k}, {k}", "0")],
    ),
    ("clip_low", "return max(x, 1)", "return max(x, 0)", ("-{k}", "0"), [("{k}", "{k}"), ("0", "0"), ("-1", "0")]),
]
MODULES_C = ["metrics", "convert", "checks", "mathutil", "values", "rules"]

# The varied training set (train-varied.jsonl): the hinted level in several wordings (none of them set b's), and bug
# lines with characters a plain `sed 's/old/new/'` cannot take as they are (`*`, `[`, `/`), so what training rewards is
# the skill (read the hint wherever it sits, write a command that makes that edit), not one template's shape.
FAMILIES_SPECIAL = [
    (
        "scale_{k}",
        "return x * {k1}",
        "return x * {k}",
        ("2", "2 * {k}"),
        [("0", "0"), ("1", "{k}"), ("-3", "-3 * {k}")],
    ),
    (
        "second",
        "return items[0]",
        "return items[1]",
        ("[{k}, 5, 6]", "5"),
        [("[1, 2]", "2"), ("[0, {k}, 0]", "{k}"), ("'ab'", "'b'")],
    ),
    (
        "halve_{k}",
        "return x / {k}",
        "return x // {k}",
        ("{k} + 1", "1"),
        [("{k}", "1"), ("4 * {k} + 1", "4"), ("0", "0")],
    ),
]
MODULES_VARIED = MODULES + ["service", "strutil", "numeric", "basic"]
# (opening, file heading, check heading, hint); {m} the module, {bug}/{fix} the lines.
WORDINGS = [
    None,  # variant a's own wording (eval.jsonl's)
    (
        "A test in this repo fails. Repair {m}.py.",
        "File {m}.py:",
        "Failing test: assert",
        "Edit to make in {m}.py: `{bug}` becomes `{fix}`.",
    ),
    (
        "{m}.py has a bug; the test suite is red.",
        "Here is {m}.py:",
        "Expected: assert",
        "Replace the line `{bug}` with `{fix}`.",
    ),
    (
        "Make the tests pass by fixing {m}.py.",
        "Source of {m}.py:",
        "This assertion fails: assert",
        "Solution: `{bug}` -> `{fix}` in {m}.py.",
    ),
]

# The mixed training set (train-mixed.jsonl): every slot of the instructions drawn on its own from these lists, and the
# hint before or after the code, so no two tasks need share a template; none of the phrasings is set b's.
OPENINGS_MIXED = [
    "Fix the bug in {m}.py so the tests pass.",
    "A test in this repo fails. Repair {m}.py.",
    "{m}.py has a bug; the test suite is red.",
    "Make the tests pass by fixing {m}.py.",
    "Something in {m}.py is wrong and a unit test catches it.",
    "Please fix {m}.py: its test does not pass.",
    "Your task: get the failing test green by editing {m}.py.",
    "Bug report: a function in {m}.py returns the wrong value.",
]
HEADINGS_MIXED = [
    "{m}.py:",
    "File {m}.py:",
    "Here is {m}.py:",
    "Source of {m}.py:",
    "Current {m}.py:",
    "The code ({m}.py):",
]
CHECKS_MIXED = [
    "The test says: assert",
    "Failing test: assert",
    "Expected: assert",
    "This assertion fails: assert",
    "The test expects: assert",
    "It should satisfy: assert",
]
HINTS_MIXED = [
    "The fix: in {m}.py, replace `{bug}` with `{fix}`.",
    "Edit to make in {m}.py: `{bug}` becomes `{fix}`.",
    "Replace the line `{bug}` with `{fix}`.",
    "Solution: `{bug}` -> `{fix}` in {m}.py.",
    "The line `{bug}` should read `{fix}`.",
    "Tip: `{bug}` must become `{fix}`.",
    "In {m}.py, swap `{bug}` for `{fix}`.",
    "Rewrite `{bug}` as `{fix}` in {m}.py.",
    "Correct line: `{fix}` (it is `{bug}` now).",
    "Note: {m}.py should say `{fix}` where it says `{bug}`.",
    "Turn `{bug}` into `{fix}`.",
]


def arguments(name: str) -> str:
    if name == "second":
        return "items"
    return (
        "a, b"
        if name in ("bigger", "smaller", "total")
        else ("word" if name == "shout" else ("s" if name.startswith(("length", "first_char")) else "x"))
    )


def make_task(
    task_id: str,
    family: int,
    k: int,
    module: str,
    bang: str,
    hinted: bool,
    variant: str = "a",
    wording: int = 0,
) -> dict:
    hinted_families = FAMILIES + FAMILIES_SPECIAL
    by_variant = {
        "a": FAMILIES,
        "b": FAMILIES_B,
        "c": FAMILIES_C,
        "varied": hinted_families,
        "mixed": hinted_families,
    }
    families = by_variant[variant]
    name, bug, fix, visible, hidden = families[family]
    fill = lambda s: s.format(k=k, k1=k + 1, bang=bang)  # noqa: E731
    fname = fill(name)
    source = f"def {fname}({arguments(name)}):\n    {fill(bug)}\n"
    call, want = fill(visible[0]), fill(visible[1])
    visible_test = f"from {module} import {fname}\n\n\ndef test_{fname}():\n    assert {fname}({call}) == {want}\n"
    hidden_lines = "".join(f"    assert {fname}({fill(c)}) == {fill(w)}\n" for c, w in [visible, *hidden])
    hidden_test = (
        "import os\nimport sys\n\n"
        "# The repository root, after pytest's own paths: a module the agent planted cannot shadow the standard library.\n"
        "sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
        f"from {module} import {fname}  # noqa: E402\n\n\ndef test_{fname}_hidden():\n{hidden_lines}"
    )
    if variant == "mixed":
        pick = random.Random(task_id)
        opening, heading, check, hint = (
            pick.choice(slot) for slot in (OPENINGS_MIXED, HEADINGS_MIXED, CHECKS_MIXED, HINTS_MIXED)
        )
        hint = hint.format(m=module, bug=fill(bug), fix=fill(fix))
        body = f"{heading.format(m=module)}\n```python\n{source}```\n{check} {fname}({call}) == {want}"
        first = opening.format(m=module)
        instructions = f"{first}\n{hint}\n{body}" if pick.random() < 0.3 else f"{first}\n{body}\n{hint}"
    elif variant == "varied" and WORDINGS[wording] is not None:
        opening, heading, check, hint = WORDINGS[wording]
        instructions = (
            f"{opening.format(m=module)}\n{heading.format(m=module)}\n```python\n{source}```\n"
            f"{check} {fname}({call}) == {want}\n{hint.format(m=module, bug=fill(bug), fix=fill(fix))}"
        )
    elif variant in ("a", "varied"):
        instructions = (
            f"Fix the bug in {module}.py so the tests pass.\n{module}.py:\n```python\n{source}```\n"
            f"The test says: assert {fname}({call}) == {want}"
        )
        if hinted:
            instructions += f"\nThe fix: in {module}.py, replace `{fill(bug)}` with `{fill(fix)}`."
    elif variant == "c":
        instructions = (
            f"{module}.py does not do what its test expects.\nCode in {module}.py:\n```python\n{source}```\n"
            f"Test that fails: assert {fname}({call}) == {want}"
        )
        if hinted:
            instructions += f"\nTo fix it, {module}.py needs `{fill(fix)}` instead of `{fill(bug)}`."
    else:
        instructions = (
            f"The tests of this repository fail because {module}.py has a bug. Make them pass.\n"
            f"Contents of {module}.py:\n```python\n{source}```\nFailing check: assert {fname}({call}) == {want}"
        )
        if hinted:
            instructions += f"\nHint: change `{fill(bug)}` to `{fill(fix)}` in {module}.py."
    files = {f"{module}.py": source, f"tests/test_{module}.py": visible_test, "tests/__init__.py": ""}
    return {
        "id": task_id,
        # Evaluations are also reported per kind: the level; the bug family is in the reference.
        "kind": "hinted" if hinted else "bare",
        "input": {"instructions": instructions},
        "reference": {
            "fixed": fill(fix),
            "file": f"{module}.py",
            "family": name.replace("_{k}", "").replace("_of", ""),
        },
        "setup": {"command": ["python3", "examples/coding/write-files.py", json.dumps(files, sort_keys=True)]},
        "hidden": {"files": {"hidden_tests/test_hidden.py": hidden_test, "hidden_tests/pytest.ini": "[pytest]\n"}},
    }


def write_tasks(path: Path, tasks: list[dict], what: str) -> None:
    path.write_text("".join(json.dumps(t, sort_keys=True) + "\n" for t in tasks), encoding="utf-8")
    print(f"wrote {len(tasks)} {what} to {path}")


def hinted_train(prefix: str, count: int, rng: random.Random, variant: str) -> list[dict]:
    """Hinted training tasks over every family (the special ones too), training parameters (k 2-9) only."""
    families = len(FAMILIES) + len(FAMILIES_SPECIAL)
    return [
        make_task(
            f"{prefix}-{i:04d}",
            i % families,
            rng.choice(range(2, 10)),
            rng.choice(MODULES_VARIED),
            rng.choice(BANGS),
            True,
            variant=variant,
            wording=(i // families + i) % len(WORDINGS),
        )
        for i in range(count)
    ]


def held_out(variant: str, count: int, families: list, modules: list[str], rng: random.Random) -> list[dict]:
    """A held-out set in its own families, modules and wording, held-out parameters (k 11-19), both levels."""
    return [
        make_task(
            f"code-eval-{variant}-{i:04d}",
            i % len(families),
            rng.choice(range(11, 20)),
            rng.choice(modules),
            rng.choice(BANGS),
            (i + i // len(families)) % 2 == 0,
            variant=variant,
        )
        for i in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--train", type=int, default=48)
    parser.add_argument("--eval", type=int, default=24)
    parser.add_argument("--eval-b", type=int, default=24, help="held-out set b: other operations, files and wording")
    parser.add_argument("--eval-c", type=int, default=24, help="held-out set c: like b, no sed escaping needed")
    parser.add_argument("--train-varied", type=int, default=48, help="hinted, several wordings, harder bug lines")
    parser.add_argument("--train-mixed", type=int, default=96, help="hinted, every slot's wording drawn on its own")
    parser.add_argument("--out", default="examples/coding/tasks")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    # Held-out tasks use parameters train never does (k 2-9 train, 11-19 held out).
    splits = {"train": (args.train, range(2, 10)), "eval": (args.eval, range(11, 20))}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for split, (count, ks) in splits.items():
        # Half of each round of families hinted, the other half the next round: every family at both levels.
        tasks = [
            make_task(
                f"code-{split}-{i:04d}",
                i % len(FAMILIES),
                rng.choice(ks),
                rng.choice(MODULES),
                rng.choice(BANGS),
                (i + i // len(FAMILIES)) % 2 == 0,
            )
            for i in range(count)
        ]
        write_tasks(out / f"{split}.jsonl", tasks, f"{split} tasks")
        if split == "train":
            # The curriculum's first level: the hinted half, where the base model has signal (learn.json).
            hinted = [t for t in tasks if t["kind"] == "hinted"]
            write_tasks(out / "train-hinted.jsonl", hinted, "hinted train tasks")
    # Their own random streams: train.jsonl and eval.jsonl stay what they were before sets b and c existed.
    tasks_b = held_out("b", args.eval_b, FAMILIES_B, MODULES_B, random.Random(args.seed * 1_000_003 + 2))
    write_tasks(out / "eval-b.jsonl", tasks_b, "held-out set b tasks")
    tasks_c = held_out("c", args.eval_c, FAMILIES_C, MODULES_C, random.Random(args.seed * 1_000_003 + 5))
    write_tasks(out / "eval-c.jsonl", tasks_c, "held-out set c tasks")
    # Their own random streams; training parameters (k 2-9) only.
    varied = hinted_train("code-train-varied", args.train_varied, random.Random(args.seed * 1_000_003 + 3), "varied")
    write_tasks(out / "train-varied.jsonl", varied, "varied hinted train tasks")
    mixed = hinted_train("code-train-mixed", args.train_mixed, random.Random(args.seed * 1_000_003 + 4), "mixed")
    write_tasks(out / "train-mixed.jsonl", mixed, "mixed-wording hinted train tasks")


if __name__ == "__main__":
    main()
