"""Writes the arithmetic task sets reproducibly: train.jsonl, eval.jsonl (held out, the training wording) and
eval-b.jsonl (held out, other wordings: a gain that a rewording erases is not a gain). Questions never repeat across files.

    .venv/bin/python examples/arithmetic/make-tasks.py [--seed 20261203] [--check]
"""

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent / "tasks"
SIZES = {"train": 240, "eval": 60, "eval-b": 60}


def draw(rng: random.Random) -> tuple[str, int, int, int]:
    kind = rng.choice(["add", "sub", "mul"])
    if kind == "add":
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        return kind, a, b, a + b
    if kind == "sub":
        a, b = rng.randint(50, 99), rng.randint(10, 49)
        return kind, a, b, a - b
    a, b = rng.randint(2, 9), rng.randint(11, 30)
    return kind, a, b, a * b


SYMBOL = {"add": "+", "sub": "-", "mul": "*"}
REWORDED = {
    "add": ["Compute {a} plus {b}.", "What do you get when you add {a} and {b}?", "Find the sum of {a} and {b}."],
    "sub": ["Compute {a} minus {b}.", "What do you get when you take {b} from {a}?", "Subtract {b} from {a}."],
    "mul": [
        "Compute {a} times {b}.",
        "What do you get when you multiply {a} by {b}?",
        "Find the product of {a} and {b}.",
    ],
}


def make(seed: int) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    seen: set[tuple[str, int, int]] = set()
    sets: dict[str, list[dict]] = {}
    for name, size in SIZES.items():
        rows = []
        while len(rows) < size:
            kind, a, b, answer = draw(rng)
            if (kind, a, b) in seen:
                continue
            seen.add((kind, a, b))
            wording = "What is {a} " + SYMBOL[kind] + " {b}?" if name != "eval-b" else rng.choice(REWORDED[kind])
            rows.append(
                {
                    "id": f"arith-{name}-{len(rows) + 1:04d}",
                    "input": {"question": wording.format(a=a, b=b)},
                    "reference": {"answer": answer},
                    "kind": kind,
                }
            )
        sets[name] = rows
    return sets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--check", action="store_true", help="fail if the committed files differ")
    args = parser.parse_args()
    stale = []
    for name, rows in make(args.seed).items():
        text = "".join(json.dumps(row) + "\n" for row in rows)
        path = HERE / f"{name}.jsonl"
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path))
        else:
            HERE.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"stale task files: {', '.join(stale)} (run without --check)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
