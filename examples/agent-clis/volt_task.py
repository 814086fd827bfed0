"""The rollout contract for the Python agents here: the task's prompt in, the final answer out."""

import json
import os


def task_prompt() -> str:
    """`input.instructions`, `input.prompt` or `input.question` of VOLT_TASK (or VOLT_TASK_FILE), or a string input."""
    raw = os.environ.get("VOLT_TASK")
    if raw is None and os.environ.get("VOLT_TASK_FILE"):
        with open(os.environ["VOLT_TASK_FILE"], encoding="utf-8") as f:
            raw = f.read()
    if raw is None:
        raise SystemExit("no task: set VOLT_TASK or VOLT_TASK_FILE")
    task_input = json.loads(raw).get("input")
    if isinstance(task_input, dict):
        task_input = task_input.get("instructions") or task_input.get("prompt") or task_input.get("question")
    if not isinstance(task_input, str) or not task_input:
        raise SystemExit("invalid task: input must be a string or have instructions, prompt or question")
    return task_input


def write_output(text: str) -> None:
    """The answer to VOLT_OUTPUT_FILE when the runner set one, and to stdout."""
    print(text)
    if os.environ.get("VOLT_OUTPUT_FILE"):
        with open(os.environ["VOLT_OUTPUT_FILE"], "w", encoding="utf-8") as f:
            f.write(text)


def list_files() -> str:
    """List the files in the working directory."""
    return "\n".join(sorted(os.listdir("."))) or "(empty)"


MAX_TOKENS = int(os.environ.get("AGENT_MAX_TOKENS", "64"))
MAX_TURNS = int(os.environ.get("AGENT_MAX_TURNS", "3"))
INSTRUCTIONS = "You are a coding agent working in the current directory. Use the tools, then answer in one line."
