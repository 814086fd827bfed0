import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { PolicyRef } from '../contracts/policy.js';
import { DeployAliasError } from '../lineage/deploy-alias.js';
import { moveBest, type AliasTarget } from '../serving/promotion.js';
import { CheckpointNotFoundError, servePolicy, servingDeps } from '../serving/serve-policy.js';
import type { ActivityDeps } from './deps.js';
import { failingAs, type FailureRule } from './failure-rules.js';
import { heartbeating } from './heartbeat.js';

const rules: FailureRule[] = [
  [CheckpointNotFoundError, FailureType.CheckpointNotFound],
  [DeployAliasError, FailureType.InvalidConfig],
];

interface PromoteInput {
  config: RunConfig;
  iteration: number;
  policy: PolicyRef;
  score: number;
}

/** Serving activities heartbeat (their proxy has a heartbeat timeout), so a worker killed mid-promotion is noticed fast. */
export const createServingActivities = (deps: Pick<ActivityDeps, 'env' | 'store' | 'modelServer'>) => {
  const serving = servingDeps(deps.env, deps.store, deps.modelServer);
  const run = (fn: () => Promise<void>) => heartbeating(() => failingAs(rules, fn));
  return {
    /** Load the policy rollouts will sample from into the model server. */
    servePolicy: (input: { policy: PolicyRef }): Promise<void> => run(() => servePolicy(serving, input.policy)),

    /** Promotion: the `best` alias in the object store moves to the candidate and the server serves it as `<run>-best`. */
    promoteCheckpoint: ({ config, iteration, policy, score }: PromoteInput): Promise<void> =>
      run(() => moveBest(serving, config, { policy, score, iteration })),

    /** The serving side of the run's `rollback` update: to a promotion, or to the base model (`<run>-best` unloaded). */
    rollbackCheckpoint: (input: { config: RunConfig; to: AliasTarget }): Promise<void> =>
      run(() => moveBest(serving, input.config, input.to)),
  };
};
