import { z } from 'zod';
import { GatewayError } from '../routes/openai-error.js';
import type { Rollout } from './rollout-registry.js';

/** Per-attempt limits the gateway enforces on every call of a rollout (null: unbounded). */
export const rolloutBudgetSchema = z.strictObject({
  maxModelCalls: z.number().int().min(1).nullable(),
  maxCompletionTokens: z.number().int().min(1).nullable(),
  maxWallSec: z.number().int().min(1).nullable(),
  /** Most tokens one call may generate: a larger `max_tokens` / `max_completion_tokens` is clamped to it. */
  maxTokensPerCall: z.number().int().min(1),
  /** Largest `n` (choices) one call may ask for. */
  maxChoicesPerCall: z.number().int().min(1),
});
export type RolloutBudget = z.output<typeof rolloutBudgetSchema>;

/** What an attempt has used so far; kept in the registry file, so a gateway restart keeps counting. */
export const budgetUsageSchema = z.strictObject({
  calls: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
});

const overBudget = (message: string) =>
  new GatewayError(429, message, { type: 'rate_limit_error', code: 'rollout_budget_exceeded' });
const overCap = (message: string, param: string) =>
  new GatewayError(400, message, { code: 'rollout_budget_cap', param });

/**
 * Checks a call against its rollout's budget before anything goes upstream, and bounds its completion to what is
 * left and to the per-call cap (agent CLIs ask for 32000 or 64000 tokens as a matter of course; each clamp is noted in
 * `translation`). Returns the reason to record when the call is refused for the budget (the attempt then ends
 * agent_failed).
 */
export function admitCall(
  rollout: Rollout,
  body: Record<string, unknown>,
  translation: string[],
): { refused: string | null; error: GatewayError | null } {
  const budget = rollout.record.budget;
  if (!budget) return { refused: null, error: null };
  const usage = rollout.record.usage;
  const n = typeof body.n === 'number' ? body.n : 1;
  if (n > budget.maxChoicesPerCall)
    return {
      refused: null,
      error: overCap(`n ${n} is above this rollout's cap of ${budget.maxChoicesPerCall} choices per call`, 'n'),
    };
  const refuse = (reason: string) => ({ refused: reason, error: overBudget(`rollout budget exhausted: ${reason}`) });
  if (budget.maxModelCalls !== null && usage.calls >= budget.maxModelCalls)
    return refuse(`${budget.maxModelCalls} model calls used`);
  const left = budget.maxCompletionTokens === null ? Infinity : budget.maxCompletionTokens - usage.completionTokens;
  if (left <= 0) return refuse(`${budget.maxCompletionTokens} completion tokens used`);
  const wallSec = (Date.now() - Date.parse(rollout.record.createdAt)) / 1000;
  if (budget.maxWallSec !== null && wallSec > budget.maxWallSec) return refuse(`wall time ${budget.maxWallSec} s used`);
  // The engine may generate at most what is left of the budget, and never more than the per-call cap.
  const asked =
    typeof body.max_completion_tokens === 'number'
      ? body.max_completion_tokens
      : typeof body.max_tokens === 'number'
        ? body.max_tokens
        : Infinity;
  const bound = Math.min(asked, budget.maxTokensPerCall, Math.floor(left / n));
  if (bound <= 0) return refuse(`${budget.maxCompletionTokens} completion tokens used`);
  if (asked !== Infinity && bound < asked)
    translation.push(
      bound === budget.maxTokensPerCall
        ? `max_tokens ${asked} clamped to ${bound}: the rollout's per-call cap`
        : `max_tokens ${asked} clamped to ${bound}: the rollout's completion-token budget left`,
    );
  delete body.max_completion_tokens;
  body.max_tokens = bound;
  usage.calls += 1;
  return { refused: null, error: null };
}

/** Counts a finished call's completion tokens (usage as the engine reported it). */
export function countCompletion(rollout: Rollout, response: unknown): void {
  const tokens = (response as { usage?: { completion_tokens?: unknown } } | null)?.usage?.completion_tokens;
  if (typeof tokens === 'number' && Number.isFinite(tokens)) rollout.record.usage.completionTokens += tokens;
}
