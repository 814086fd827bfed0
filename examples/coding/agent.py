"""A coding agent in the style of mini-SWE-agent, on the openai Python SDK: the model answers with one shell command
in a ```bash block, the agent runs it in its working directory and sends back the exit code and output, until the
model submits with `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` (mini-SWE-agent's own convention) or steps run out.

Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t","input":{"instructions":"..."}}' \
     .venv/bin/python examples/coding/agent.py
"""

import json
import os
import re
import subprocess
import sys

from openai import OpenAI

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SYSTEM_PROMPT = "\n".join(
    [
        "You are a helpful assistant that can interact with a computer shell to fix bugs in a Python repository.",
        "Your response must contain exactly ONE bash code block with ONE command, like:",
        "```bash\nsed -i 's/old text/new text/' file.py\n```",
        f"When the bug is fixed, submit with:\n```bash\necho {SUBMIT}\n```",
    ]
)
# One worked example, ending on the fix: small models copy the demonstrated next turn, so a demo that ended on the
# submission made the base model submit at once (greedy: 7 of the first 9 held-out transcripts).
EXAMPLE = [
    {
        "role": "user",
        "content": "Fix the bug in shapes.py so the tests pass.\nshapes.py:\n```python\n"
        "def perimeter(w, h):\n    return w + h\n```\nThe test says: assert perimeter(2, 3) == 10",
    },
    {"role": "assistant", "content": "```bash\nsed -i 's/return w + h/return 2 * (w + h)/' shapes.py\n```"},
]
FORMAT_ERROR = "Please always provide EXACTLY ONE action in triple backticks: ```bash\n<command>\n```"
BLOCK = re.compile(r"```(?:bash|sh)?\s*\n(.*?)(?:```|$)", re.DOTALL)


def read_task() -> dict:
    raw = os.environ.get("VOLT_TASK")
    if raw is None and os.environ.get("VOLT_TASK_FILE"):
        with open(os.environ["VOLT_TASK_FILE"], encoding="utf-8") as f:
            raw = f.read()
    if raw is None:
        raise ValueError("no task: set VOLT_TASK or VOLT_TASK_FILE")
    task = json.loads(raw)
    instructions = task.get("input", {}).get("instructions") if isinstance(task, dict) else None
    if not isinstance(instructions, str) or not instructions:
        raise ValueError("invalid task: input.instructions must be a non-empty string")
    return task


def run(command: str, timeout: int) -> str:
    """The command in a shell in the working directory; what comes back is what the model sees next."""
    try:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"the command timed out after {timeout} s"
    output = (done.stdout + done.stderr)[-2000:]
    return f"exit code: {done.returncode}\noutput:\n{output}"


def main() -> None:
    task = read_task()
    model = os.environ.get("OPENAI_MODEL", "policy")
    temperature = float(os.environ.get("AGENT_TEMPERATURE", "1.0"))
    max_steps = int(os.environ.get("AGENT_MAX_STEPS", "4"))
    max_tokens = int(os.environ.get("AGENT_MAX_TOKENS", "96"))
    timeout = int(os.environ.get("AGENT_COMMAND_TIMEOUT", "30"))
    client = OpenAI(timeout=float(os.environ.get("AGENT_REQUEST_TIMEOUT", "120")))
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        *EXAMPLE,
        {"role": "user", "content": task["input"]["instructions"]},
    ]
    for step in range(1, max_steps + 1):
        completion = client.chat.completions.create(
            model=model, messages=messages, max_tokens=max_tokens, temperature=temperature
        )
        content = completion.choices[0].message.content or ""
        print(f"[step {step}] model: {json.dumps(content)}", file=sys.stderr)
        messages.append({"role": "assistant", "content": content})
        blocks = BLOCK.findall(content)
        if len(blocks) != 1:
            messages.append({"role": "user", "content": FORMAT_ERROR})
            continue
        command = blocks[0].strip()
        if SUBMIT in command:
            print("submitted", file=sys.stderr)
            break
        observation = run(command, timeout)
        print(f"[step {step}] ran: {json.dumps(command)} -> {json.dumps(observation[:300])}", file=sys.stderr)
        messages.append({"role": "user", "content": observation})
    if os.environ.get("VOLT_OUTPUT_FILE"):
        with open(os.environ["VOLT_OUTPUT_FILE"], "w", encoding="utf-8") as f:
            f.write(f"{step} steps\n")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 — any own failure is a non-zero exit with a one-line reason
        print(f"coding agent failed: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
