"""The Claude Agent SDK (PyPI claude-agent-sdk) as a Volt agent. The SDK drives the Claude Code CLI it bundles, which
reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the rollout contract.

Run: ANTHROPIC_BASE_URL=... ANTHROPIC_API_KEY=... VOLT_TASK='{"id":"t","input":"..."}' \
  .venv-agents/bin/python examples/agent-clis/claude_agent_sdk_agent.py
"""

import os
import sys

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ResultError, ResultMessage, query
from volt_task import INSTRUCTIONS, MAX_TURNS, task_prompt, write_output

TOOLS = ["Bash", "Read"]


async def main() -> int:
    options = ClaudeAgentOptions(
        # Claude Code's own system prompt and tools render to ~24,000 tokens, past SmolLM2's 8192-token context.
        system_prompt=INSTRUCTIONS,
        tools=TOOLS,
        allowed_tools=TOOLS,
        max_turns=MAX_TURNS,
        setting_sources=[],
        cli_path=os.environ.get("CLAUDE_CLI"),
        # The sandbox has no network beyond the gateway: no telemetry or update checks to wait for.
        env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"},
    )
    answer = ""
    try:
        async for message in query(prompt=task_prompt(), options=options):
            if isinstance(message, ResultMessage):
                answer = message.result or ""
    except ResultError as e:
        # An HTTP error from the API fails the agent; running out of turns, or every answer cut at max_tokens, is a
        # result for the reward to judge.
        if e.api_error_status is not None:
            raise
        print(f"no answer: {e.terminal_reason}: {e.result}", file=sys.stderr)
    write_output(answer)
    return 0


raise SystemExit(anyio.run(main))
