import type { RollbackRequest } from './definitions.js';
import type { Promotion, RunState } from './types.js';

/** What a rollback chooses from: every promotion so far and which one is the best now. */
export type PromotionHistory = Pick<RunState, 'promotions' | 'bestIteration'>;

/** A candidate is promoted when its held-out score beats the current best's by more than the margin. */
export const beatsBest = (score: number, best: { score: number }, margin: number): boolean =>
  score > best.score + margin;

/** Plain checks (no zod in workflow code): the request's shape, and that the run has something to return to. */
export function validateRollback(request: RollbackRequest, run: PromotionHistory | undefined): void {
  if (!request || typeof request !== 'object')
    throw new Error('rollback expects {"to": "base" | "previous" | <iteration>}');
  const { to } = request;
  if (to !== 'base' && to !== 'previous' && !(typeof to === 'number' && Number.isInteger(to) && to >= 0)) {
    throw new Error(
      `rollback.to: expected "base", "previous" or the iteration of a promotion, got ${JSON.stringify(to)}`,
    );
  }
  if (!run) throw new Error('rollback: the run has not evaluated its base model yet; try again later');
  rollbackTarget(request, run);
}

/** The promotion a rollback returns to; throws (rejecting the update) when there is none. */
export function rollbackTarget(request: RollbackRequest, { promotions, bestIteration }: PromotionHistory): Promotion {
  const base = promotions.find((p) => p.iteration === null);
  if (request.to === 'base') {
    if (!base) throw new Error('rollback: the run has no base entry');
    return base;
  }
  if (request.to === 'previous') {
    const at = promotions.findIndex((p) => p.iteration === bestIteration);
    const previous = at > 0 ? promotions[at - 1] : undefined;
    if (!previous) throw new Error('rollback: the best is the base model; there is no earlier promotion');
    return previous;
  }
  const target = promotions.find((p) => p.iteration === request.to);
  if (!target) {
    const known = promotions.flatMap((p) => (p.iteration === null ? [] : [p.iteration]));
    throw new Error(
      `rollback.to: iteration ${request.to} promoted nothing (promotions: ${known.length ? known.join(', ') : 'none'})`,
    );
  }
  return target;
}
