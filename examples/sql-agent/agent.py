"""A SQL agent on the openai Python SDK: it shows the model the database schema and an instruction; the model
writes one statement per turn in <sql>...</sql>, the agent runs it with sqlite3 and shows the result, and the
model ends with <done>.

Run in the directory holding the database: OPENAI_BASE_URL=... OPENAI_API_KEY=... \
    VOLT_TASK='{"id":"t1","input":{"database":"shop.db","instruction":"Mark order 17 as shipped."}}' \
    .venv/bin/python examples/sql-agent/agent.py
"""

import json
import os
import pathlib
import re
import sqlite3
import sys

from openai import OpenAI

PROTOCOL = "\n".join(
    [
        "You change a SQLite database by writing SQL.",
        "Write exactly one SQL statement inside <sql></sql> and wait for its result.",
        "When the change is made, write <done>.",
    ]
)
EXAMPLE = [
    {"role": "user", "content": "Instruction: Set the stock of product 2 to 40."},
    {"role": "assistant", "content": "<sql>UPDATE products SET stock = 40 WHERE id = 2;</sql>"},
    {"role": "user", "content": "OK, 1 row changed."},
    {"role": "assistant", "content": "<done>"},
]
MAX_ROWS_SHOWN = 10


def read_task() -> dict:
    raw = os.environ.get("VOLT_TASK")
    if raw is None and os.environ.get("VOLT_TASK_FILE"):
        raw = pathlib.Path(os.environ["VOLT_TASK_FILE"]).read_text(encoding="utf-8")
    if raw is None:
        raise ValueError("no task: set VOLT_TASK or VOLT_TASK_FILE")
    task = json.loads(raw)
    task_input = task.get("input") if isinstance(task, dict) else None
    for field in ("database", "instruction"):
        if not isinstance(task_input, dict) or not isinstance(task_input.get(field), str) or not task_input[field]:
            raise ValueError(f"invalid task: input.{field} must be a non-empty string")
    database = pathlib.PurePath(task_input["database"])
    if database.is_absolute() or ".." in database.parts:
        raise ValueError("invalid task: input.database must be a path inside the working directory")
    return task


def open_database(path: str) -> sqlite3.Connection:
    if not pathlib.Path(path).is_file():
        raise FileNotFoundError(f"database {path} does not exist in {os.getcwd()}")
    con = sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None)  # autocommit: each statement sticks
    # The agent works on its one database: attaching others would reach outside the working directory.
    con.set_authorizer(
        lambda action, *_: (
            sqlite3.SQLITE_DENY if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH) else sqlite3.SQLITE_OK
        )
    )
    return con


def schema_of(con: sqlite3.Connection) -> str:
    rows = con.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL ORDER BY name"
    ).fetchall()
    return "\n".join(row[0] + ";" for row in rows)


def run_sql(con: sqlite3.Connection, statement: str) -> str:
    """The result as the model sees it: rows of a query, the change count of an update, or the error."""
    try:
        cursor = con.execute(statement)
    except (sqlite3.Error, sqlite3.Warning) as error:  # Warning: more than one statement
        return f"Error: {error}"
    if cursor.description is None:
        return f"OK, {cursor.rowcount} row{'' if cursor.rowcount == 1 else 's'} changed."
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchmany(MAX_ROWS_SHOWN + 1)
    lines = [" | ".join(columns)] + [" | ".join(str(v) for v in row) for row in rows[:MAX_ROWS_SHOWN]]
    if len(rows) > MAX_ROWS_SHOWN:
        lines.append(f"... (more than {MAX_ROWS_SHOWN} rows)")
    return "\n".join(lines) if rows else "No rows."


def main() -> None:
    task = read_task()
    con = open_database(task["input"]["database"])
    model = os.environ.get("OPENAI_MODEL", "policy")
    temperature = float(os.environ.get("AGENT_TEMPERATURE", "1.0"))
    max_turns = int(os.environ.get("AGENT_MAX_TURNS", "5"))
    max_tokens = int(os.environ.get("AGENT_MAX_TOKENS", "96"))
    client = OpenAI(timeout=120.0)
    messages = [
        {"role": "system", "content": f"{PROTOCOL}\n\nThe database has these tables:\n{schema_of(con)}"},
        *EXAMPLE,
        {"role": "user", "content": f"Instruction: {task['input']['instruction']}"},
    ]
    executed: list[str] = []
    for turn in range(1, max_turns + 1):
        completion = client.chat.completions.create(
            model=model, messages=messages, max_tokens=max_tokens, temperature=temperature, stop=["</sql>"]
        )
        content = completion.choices[0].message.content or ""
        print(f"[turn {turn}] model: {json.dumps(content)}", file=sys.stderr)
        messages.append({"role": "assistant", "content": content})
        sql = re.search(r"<sql>([\s\S]*?)(?:</sql>|$)", content)
        if sql is None:
            if "<done>" in content:
                break
            reply = "Write one SQL statement inside <sql></sql>, or <done> when the change is made."
        else:
            executed.append(sql.group(1).strip())
            reply = run_sql(con, sql.group(1).strip())
        messages.append({"role": "user", "content": reply})
        print(f"[turn {turn}] agent: {json.dumps(reply)}", file=sys.stderr)
    con.close()
    summary = "\n".join(executed)
    if os.environ.get("VOLT_OUTPUT_FILE"):
        pathlib.Path(os.environ["VOLT_OUTPUT_FILE"]).write_text(summary, encoding="utf-8")
    print(summary)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 — any own failure is a non-zero exit with a one-line reason
        print(f"sql agent failed: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
