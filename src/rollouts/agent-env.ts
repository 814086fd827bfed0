import { DEFAULT_ENV_ALLOW_LIST, agentTaskJson, type RolloutSpec } from './spec.js';

/** The run config's fixed variables, then the rollout contract (DESIGN.md): gateway, token, task; nothing of the operator's. */
export function contractEnv(
  spec: RolloutSpec,
  files: { taskFile: string; outputFile?: string },
): Record<string, string> {
  const env: Record<string, string> = {
    ...spec.env,
    OPENAI_BASE_URL: spec.gateway.baseUrl,
    OPENAI_API_KEY: spec.gateway.token,
    // Anthropic SDKs append /v1/messages themselves, so their base is the rollout's root.
    ANTHROPIC_BASE_URL: spec.gateway.baseUrl.replace(/\/v1\/?$/, ''),
    ANTHROPIC_API_KEY: spec.gateway.token,
    VOLT_TASK: agentTaskJson(spec),
    VOLT_TASK_FILE: files.taskFile,
  };
  if (files.outputFile) env.VOLT_OUTPUT_FILE = files.outputFile;
  return env;
}

/** The whole environment of a local agent: allow-listed worker variables plus the contract, nothing else. */
export function localAgentEnv(
  spec: RolloutSpec,
  parentEnv: NodeJS.ProcessEnv,
  files: { taskFile: string; outputFile: string },
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of spec.envAllowList ?? DEFAULT_ENV_ALLOW_LIST) {
    const value = parentEnv[name];
    // The schema already refuses VOLT_* names; this guards callers that skipped it.
    if (value !== undefined && !name.startsWith('VOLT_')) env[name] = value;
  }
  return { ...env, ...contractEnv(spec, files) };
}
