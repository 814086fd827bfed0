// Codex CLI as a Volt agent: a config.toml in the attempt's HOME names the rollout's gateway as a Responses-API model
// provider, then `codex exec <task>` runs there; its last message goes to VOLT_OUTPUT_FILE.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { localBin, taskPrompt } from './task-prompt.mjs';

const env = process.env;
if (!env.OPENAI_BASE_URL || !env.HOME) throw new Error('codex agent: OPENAI_BASE_URL and HOME must be set');
const codexHome = env.CODEX_HOME ?? path.join(env.HOME, '.codex');
mkdirSync(codexHome, { recursive: true });
// Codex's own instructions and tools render to ~9,100 tokens, past SmolLM2's 8192-token context: a short prompt and
// no multi-agent, goal or web-search tools keep a first call near 1,900 tokens.
const instructions = path.join(codexHome, 'volt-instructions.md');
writeFileSync(
  instructions,
  env.CODEX_INSTRUCTIONS ??
    'You are a coding agent working in the current directory. Run shell commands with exec_command to inspect and change files, then reply with a one-line summary.\n',
);
writeFileSync(
  path.join(codexHome, 'config.toml'),
  `model = "volt-policy"
model_provider = "volt"
model_instructions_file = ${JSON.stringify(instructions)}
web_search = "disabled"

[model_providers.volt]
name = "Volt gateway"
base_url = ${JSON.stringify(env.OPENAI_BASE_URL)}
env_key = "OPENAI_API_KEY"
wire_api = "responses"
# A CPU-served policy under load can take minutes to its first token; Codex hangs up after 300 s by default.
stream_idle_timeout_ms = 900000

[features]
multi_agent = false
goals = false
skill_search = false
apps = false
plugins = false
`,
);
const args = [
  'exec',
  '--skip-git-repo-check',
  // Volt's bubblewrap sandbox holds the attempt; Codex's own (landlock/seccomp) cannot nest in it.
  '--dangerously-bypass-approvals-and-sandbox',
  ...(env.VOLT_OUTPUT_FILE ? ['--output-last-message', env.VOLT_OUTPUT_FILE] : []),
  taskPrompt(),
];
const child = spawn(localBin('codex'), args, {
  stdio: ['ignore', 'inherit', 'inherit'],
  env: { ...env, CODEX_HOME: codexHome },
});
child.on('error', (e) => {
  console.error(`codex agent: ${e.message}`);
  process.exit(127);
});
child.on('close', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
