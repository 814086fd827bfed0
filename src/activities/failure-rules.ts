import { ApplicationFailure } from '@temporalio/activity';
import type { FailureType } from '../contracts/failures.js';

/** A domain error class and the failure type it fails an activity with. */
export type FailureRule = readonly [abstract new (...args: never[]) => Error, FailureType];

/** Run `fn`; a domain error named in `rules` fails the activity at once, non-retryably, with its type (no retry can fix it). */
export async function failingAs<T>(rules: readonly FailureRule[], fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const rule = rules.find(([cls]) => err instanceof cls);
    if (rule) throw ApplicationFailure.create({ type: rule[1], message: (err as Error).message, nonRetryable: true });
    throw err;
  }
}
