"""Pydantic AI (PyPI pydantic-ai-slim[openai,anthropic]) as a Volt agent, with one function tool, on the model class
named by argv[1]: `openai-chat` (OpenAIChatModel), `openai-responses` (OpenAIResponsesModel) or `anthropic`
(AnthropicModel). Each provider is given the contract's base URL and key.

Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... ANTHROPIC_BASE_URL=... ANTHROPIC_API_KEY=... VOLT_TASK='{"id":"t","input":"..."}' \
  .venv-agents/bin/python examples/agent-clis/pydantic_ai_agent.py anthropic
"""

import os
import sys

from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits
from volt_task import INSTRUCTIONS, MAX_TOKENS, MAX_TURNS, list_files, task_prompt, write_output

kind = sys.argv[1] if len(sys.argv) > 1 else "openai-chat"
name = os.environ.get("AGENT_MODEL", "volt-policy")
env = os.environ
if kind == "anthropic":
    model = AnthropicModel(
        name, provider=AnthropicProvider(base_url=env["ANTHROPIC_BASE_URL"], api_key=env["ANTHROPIC_API_KEY"])
    )
elif kind in ("openai-chat", "openai-responses"):
    provider = OpenAIProvider(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"])
    model = (OpenAIChatModel if kind == "openai-chat" else OpenAIResponsesModel)(name, provider=provider)
else:
    raise SystemExit(f"unknown model class {kind!r}: openai-chat, openai-responses or anthropic")

agent = Agent(model, instructions=INSTRUCTIONS, tools=[list_files])
try:
    result = agent.run_sync(
        task_prompt(), model_settings={"max_tokens": MAX_TOKENS}, usage_limits=UsageLimits(request_limit=MAX_TURNS)
    )
    write_output(str(result.output))
except (UsageLimitExceeded, UnexpectedModelBehavior) as e:
    # The model ran out of turns or kept answering in a shape the agent cannot use: a result, not an agent error.
    print(f"no answer: {e}", file=sys.stderr)
    write_output("")
