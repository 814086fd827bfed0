import type { RolloutRunner, RolloutSpecInput, RunOptions } from './spec.js';
import type { RolloutRef, RunnerResult } from '../contracts/rollout.js';

export interface RetryOptions extends RunOptions {
  maxAttempts: number;
  /** Registers attempt `attempt` (after `previous`, the infra-failed attempt before it, if any) with the gateway and returns its own base URL and token. */
  register: (ref: RolloutRef, previous?: RunnerResult) => Promise<{ baseUrl: string; token: string }>;
  /** Number of the first attempt (a resumed activity continues after the attempts it already made). */
  firstAttempt?: number;
  signal: AbortSignal;
}

/**
 * Run a rollout until it yields a result: only `infra_failed` is retried, each time as a new attempt
 * with a fresh gateway token, so spans of a failed attempt never mix with the next. Returns every attempt.
 */
export async function runWithRetries(
  runner: RolloutRunner,
  spec: Omit<RolloutSpecInput, 'gateway'>,
  options: RetryOptions,
): Promise<RunnerResult[]> {
  if (!Number.isInteger(options.maxAttempts) || options.maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be an integer >= 1, got ${options.maxAttempts}`);
  }
  const first = options.firstAttempt ?? spec.ref.attempt;
  const { signal } = options;
  const results: RunnerResult[] = [];
  for (let attempt = first; attempt < first + options.maxAttempts; attempt++) {
    signal.throwIfAborted();
    const ref = { ...spec.ref, attempt };
    const gateway = await options.register(ref, results[results.length - 1]);
    const result = await runner.run({ ...spec, ref, gateway }, signal, options);
    results.push(result);
    if (result.outcome !== 'infra_failed') break;
  }
  return results;
}
