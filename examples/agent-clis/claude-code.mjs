// Claude Code as a Volt agent: `claude -p <task>` against the rollout's gateway, its final text to VOLT_OUTPUT_FILE.
// ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY come from the rollout contract; nothing else points Claude Code at Volt.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { localBin, taskPrompt } from './task-prompt.mjs';

const env = process.env;
// Claude Code's own system prompt and ~25 tools render to ~24,000 tokens, three times SmolLM2's 8192-token context.
const systemPrompt =
  env.CLAUDE_SYSTEM_PROMPT ??
  'You are a coding agent working in the current directory. Use the tools to inspect and change files, then reply with a one-line summary.';
const args = [
  '-p',
  taskPrompt(),
  '--output-format',
  'json',
  '--max-turns',
  env.CLAUDE_MAX_TURNS ?? '4',
  '--tools',
  env.CLAUDE_TOOLS ?? 'Bash,Read,Edit,Write',
  '--allowedTools',
  env.CLAUDE_TOOLS ?? 'Bash,Read,Edit,Write',
  '--system-prompt',
  systemPrompt,
  '--strict-mcp-config',
  '--no-session-persistence',
];
const child = spawn(localBin('claude'), args, {
  stdio: ['ignore', 'pipe', 'inherit'],
  // The sandbox has no network beyond the gateway: no telemetry, error reports or update checks to wait for.
  env: { ...env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' },
});
let stdout = '';
child.stdout.on('data', (d) => (stdout += d));
child.on('error', (e) => {
  console.error(`claude-code agent: ${e.message}`);
  process.exit(127);
});
child.on('close', (code, signal) => {
  process.stdout.write(stdout);
  let result = null;
  try {
    result = JSON.parse(stdout);
  } catch {
    // Not a result document: claude failed before its loop; its exit status says so.
  }
  if (env.VOLT_OUTPUT_FILE && typeof result?.result === 'string') writeFileSync(env.VOLT_OUTPUT_FILE, result.result);
  process.exit(code ?? (signal ? 128 : 1));
});
