"""A calculator agent on the openai Python SDK: the model asks for <calc>expr</calc>, gets the result, and
finishes with <answer>number</answer>. The same protocol as examples/calculator-ts/agent.ts.

Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t1","input":{"question":"..."}}' \
     .venv/bin/python examples/calculator-py/agent.py
"""

import ast
import json
import operator
import os
import re
import sys

from openai import OpenAI

SYSTEM_PROMPT = "\n".join(
    [
        "You solve math word problems with a calculator.",
        "To calculate, write <calc>expression</calc>, for example <calc>23*12-45</calc>, and wait for the result.",
        "When you know the final answer, write <answer>number</answer>.",
    ]
)
# Repeated under each question: a 135M model forgets the system prompt's format, not the last line it read.
HINT = "Use <calc>expression</calc> to calculate, then <answer>number</answer>."
# One worked example: tiny models copy a demonstrated pattern far better than they follow instructions.
EXAMPLE = [
    {
        "role": "user",
        "content": f"Tom has 3 bags with 5 apples each. He eats 2 apples. How many apples are left?\n{HINT}",
    },
    {"role": "assistant", "content": "<calc>3*5-2</calc>"},
    {"role": "user", "content": "Result: 13"},
    {"role": "assistant", "content": "<answer>13</answer>"},
]
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


class CalcError(ValueError):
    pass


def evaluate(expression: str) -> float:
    """Parses with ast and walks only number and + - * / nodes: model text is never eval'd."""
    if len(expression) > 200:
        raise CalcError("expression longer than 200 characters")
    source = re.sub(r"[,$\s]", "", expression.replace("×", "*").replace("x", "*").replace("÷", "/"))
    if not source:
        raise CalcError("empty expression")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as error:
        raise CalcError(f'cannot parse "{expression}": {error.msg}') from None

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Div) and right == 0:
                raise CalcError(f'division by zero in "{expression}"')
            return OPERATORS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](walk(node.operand))
        raise CalcError(f'unsupported "{ast.unparse(node)}" in "{expression}"')

    return walk(tree.body)


def format_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(round(value, 6))


def without_words(text: str) -> str:
    """Units and labels ("12*7 (eggs)") are not arithmetic; drop them and the brackets they leave empty."""
    return re.sub(r"\(\s*\)", "", re.sub(r"[A-Za-z]{2,}", "", text))


def final_answer(text: str) -> str:
    """Models often write "4*6 = 24" or just "4*6": take the last side and compute it."""
    try:
        return format_number(evaluate(without_words(text.split("=")[-1])))
    except CalcError:
        return text.strip()


def react_to(content: str) -> tuple[str | None, str | None]:
    """Returns (final answer, None) or (None, next user message). Tags may be left open by the stop string."""
    answer = re.search(r"<answer>([\s\S]*?)(?:</answer>|$)", content)
    if answer:
        return final_answer(answer.group(1)), None
    calc = re.search(r"<calc>([\s\S]*?)(?:</calc>|$)", content)
    if not calc:
        return None, "Write <calc>expression</calc> to calculate or <answer>number</answer> to answer."
    try:
        # "<calc>5*2 = 10": the model guessed the result too; compute the left side.
        return None, f"Result: {format_number(evaluate(without_words(calc.group(1).split('=')[0])))}"
    except CalcError as error:
        return None, f"Error: {error}"


def read_task() -> dict:
    raw = os.environ.get("VOLT_TASK")
    if raw is None and os.environ.get("VOLT_TASK_FILE"):
        with open(os.environ["VOLT_TASK_FILE"], encoding="utf-8") as f:
            raw = f.read()
    if raw is None:
        raise ValueError("no task: set VOLT_TASK or VOLT_TASK_FILE")
    task = json.loads(raw)
    question = task.get("input", {}).get("question") if isinstance(task, dict) else None
    if not isinstance(question, str) or not question:
        raise ValueError("invalid task: input.question must be a non-empty string")
    return task


def main() -> None:
    task = read_task()
    model = os.environ.get("OPENAI_MODEL", "policy")
    temperature = float(os.environ.get("AGENT_TEMPERATURE", "1.0"))
    max_turns = int(os.environ.get("AGENT_MAX_TURNS", "4"))
    max_tokens = int(os.environ.get("AGENT_MAX_TOKENS", "64"))
    client = OpenAI(timeout=120.0)
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        *EXAMPLE,
        {"role": "user", "content": f"{task['input']['question']}\n{HINT}"},
    ]
    answer = ""
    for turn in range(1, max_turns + 1):
        completion = client.chat.completions.create(
            model=model,
            messages=messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=["</calc>", "</answer>"],
        )
        content = completion.choices[0].message.content or ""
        print(f"[turn {turn}] model: {json.dumps(content)}", file=sys.stderr)
        messages.append({"role": "assistant", "content": content})
        final, reply = react_to(content)
        if final is not None:
            answer = final
            break
        if turn == max_turns - 1:
            reply += "\nNow give the final answer as <answer>number</answer>."
        messages.append({"role": "user", "content": reply})
        print(f"[turn {turn}] agent: {json.dumps(reply)}", file=sys.stderr)
    if os.environ.get("VOLT_OUTPUT_FILE"):
        with open(os.environ["VOLT_OUTPUT_FILE"], "w", encoding="utf-8") as f:
            f.write(answer)
    print(answer)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 — any own failure is a non-zero exit with a one-line reason
        print(f"calculator agent failed: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
