"""mini-swe-agent (PyPI mini-swe-agent) as a Volt agent: its DefaultAgent with the tool-calling `mini.yaml` config,
a LitellmModel on the OpenAI chat API at the contract's OPENAI_BASE_URL, and a LocalEnvironment in the workdir.

Run: OPENAI_BASE_URL=... OPENAI_API_KEY=... VOLT_TASK='{"id":"t","input":"..."}' \
  .venv-agents/bin/python examples/agent-clis/mini_swe_agent.py
"""

import os

# litellm fetches its model price list from GitHub at import unless told to use the copy it ships.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")

import yaml  # noqa: E402
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.config import builtin_config_dir  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.models.litellm_model import LitellmModel  # noqa: E402
from volt_task import MAX_TOKENS, MAX_TURNS, task_prompt, write_output  # noqa: E402

config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
model = LitellmModel(
    model_name=f"openai/{os.environ.get('AGENT_MODEL', 'volt-policy')}",
    model_kwargs={
        "api_base": os.environ["OPENAI_BASE_URL"],
        "api_key": os.environ["OPENAI_API_KEY"],
        "max_tokens": MAX_TOKENS,
        # litellm's own retries would hide a refused call behind a later success.
        "num_retries": 0,
    },
    cost_tracking="ignore_errors",
)
agent = DefaultAgent(
    model,
    LocalEnvironment(**config.get("environment", {})),
    **{**config["agent"], "step_limit": MAX_TURNS, "cost_limit": 0},
)
result = agent.run(task_prompt())
write_output(str(result.get("submission", "")))
