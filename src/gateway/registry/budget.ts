import { z } from 'zod';
import { GatewayError } from '../routes/openai-error.js';
import type { Rollout } from './rollout-registry.js';

/** Per-attempt limits the gateway enforces on every call of a rollout (null: unbounded). */
export const rolloutBudgetSchema = z.strictObject({
  maxModelCalls: z.number().int().min(1).nullable(),
  maxCompletionTokens: z.number().int().min(1).nullable(),
  maxWallSec: z.number().int().min(1).nullable(),
  /** Largest `max_tokens` / `max_completion_tokens` one call may ask for. */
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
 * left. Returns the reason to record when the call is refused for the budget (the attempt then ends agent_failed).
 */
export function admitCall(
  rollout: Rollout,
  body: Record<string, unknown>,
): { refused: string | null; error: GatewayError | null } {
  const budget = rollout.record.budget;
  if (!budget) return { refused: null, error: null };
  const usage = rollout.record.usage;
  for (const param of ['max_tokens', 'max_completion_tokens']) {
    const asked = body[param];
    if (typeof asked === 'number' && asked > budget.maxTokensPerCall) {
      return {
        refused: null,
        error: overCap(
          `${param} ${asked} is above this rollout's cap of ${budget.maxTokensPerCall} tokens per call`,
          param,
        ),
      };
    }
  }
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
