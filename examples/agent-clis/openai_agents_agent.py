"""The OpenAI Agents SDK (PyPI openai-agents) as a Volt agent: its default model, the Responses API, with one
function tool. The SDK's client reads OPENAI_BASE_URL and OPENAI_API_KEY, which the rollout contract sets.

Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t","input":"..."}' \
  .venv-agents/bin/python examples/agent-clis/openai_agents_agent.py
"""

import os
import sys

from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError
from volt_task import INSTRUCTIONS, MAX_TOKENS, MAX_TURNS, list_files, task_prompt, write_output

# Traces are exported to OpenAI by default; the sandbox reaches only the gateway, and the gateway records every call.
set_tracing_disabled(True)

agent = Agent(
    name="volt-agent",
    instructions=INSTRUCTIONS,
    model=os.environ.get("OPENAI_MODEL", "volt-policy"),
    tools=[function_tool(list_files)],
    model_settings=ModelSettings(max_tokens=MAX_TOKENS),
)
try:
    result = Runner.run_sync(agent, task_prompt(), max_turns=MAX_TURNS)
    write_output(str(result.final_output or ""))
except (MaxTurnsExceeded, ModelBehaviorError) as e:
    # Out of turns, or an answer cut at max_tokens: no answer, a result for the reward to judge, not an agent error.
    print(f"no answer: {e}", file=sys.stderr)
    write_output("")
