import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { ApoConfig } from '../config/apo.js';
import { FailureType } from '../contracts/failures.js';

export type OptimizerConfig = NonNullable<ApoConfig['optimizer']>;
export interface OptimizerMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** The optimiser LLM as the proposers use it: one chat call, the answer's text (null when it had none). */
export interface OptimizerClient {
  complete(messages: OptimizerMessage[]): Promise<string | null>;
}

/** The optimiser could not be reached or failed on its side: retryable (the activity retries, stored children are reused). */
export class OptimizerUnavailableError extends Error {
  override name = 'OptimizerUnavailableError';
}

/** One optimiser call may take this long (a large model writing a whole prompt); Temporal retries the activity. */
export const OPTIMIZER_TIMEOUT_MS = 120_000;
/** Statuses that mean the configuration is wrong (key, model name, URL): retrying cannot help. */
const CONFIG_STATUSES = new Set([401, 403, 404]);

const configFailure = (message: string) =>
  ApplicationFailure.create({ type: FailureType.InvalidConfig, message, nonRetryable: true });

/**
 * An OpenAI-compatible client for apo.optimizer: key from the worker's environment variable named by apiKeyEnv
 * (missing → non-retryable InvalidConfig), no SDK retries (Temporal owns retries), a bounded timeout.
 */
export function createOptimizerClient(
  cfg: OptimizerConfig,
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): OptimizerClient {
  const env = opts.env ?? process.env;
  let apiKey = 'none';
  if (cfg.apiKeyEnv !== undefined) {
    const value = env[cfg.apiKeyEnv];
    if (!value)
      throw configFailure(`apo.optimizer.apiKeyEnv: environment variable ${cfg.apiKeyEnv} is not set on this worker`);
    apiKey = value;
  }
  const client = new OpenAI({
    baseURL: cfg.baseUrl,
    apiKey,
    maxRetries: 0,
    timeout: opts.timeoutMs ?? OPTIMIZER_TIMEOUT_MS,
  });
  return {
    async complete(messages) {
      try {
        const res = await client.chat.completions.create({ model: cfg.model, messages, temperature: cfg.temperature });
        return res.choices[0]?.message.content ?? null;
      } catch (err) {
        if (err instanceof OpenAI.APIError && err.status !== undefined && CONFIG_STATUSES.has(err.status)) {
          throw configFailure(`apo.optimizer: ${cfg.baseUrl} refused the request (${err.status}): ${err.message}`);
        }
        const why =
          err instanceof OpenAI.APIError && err.status !== undefined
            ? `HTTP ${err.status}: ${err.message}`
            : (err as Error).message;
        throw new OptimizerUnavailableError(`optimiser ${cfg.baseUrl} (model ${cfg.model}) failed: ${why}`, {
          cause: err,
        });
      }
    },
  };
}
