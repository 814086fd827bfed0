import { Context } from '@temporalio/activity';
import { BatchFileError } from '../batches/batch-file.js';
import { FailureType } from '../contracts/failures.js';
import type { PolicyRef } from '../contracts/policy.js';
import { trainPolicy, type TrainPolicyInput } from '../training/train-policy.js';
import { TrainerRejectedError } from '../training/trainer-process.js';
import type { ActivityDeps } from './deps.js';
import { failingAs, type FailureRule } from './failure-rules.js';
import { heartbeating } from './heartbeat.js';

const rules: FailureRule[] = [
  // A corrupt batch file, or a trainer that refuses its config or batch, fails the same way on every retry.
  [BatchFileError, FailureType.InvalidBatch],
  [TrainerRejectedError, FailureType.TrainerFailed],
];

export const createUpdateActivities = (deps: ActivityDeps) => ({
  /** Train the next policy (src/training/train-policy.ts), streaming the trainer's steps into heartbeats. */
  trainPolicy(input: TrainPolicyInput): Promise<{ policy: PolicyRef; metrics: Record<string, number> }> {
    const ctx = Context.current();
    const training = { ...deps, dataDir: deps.env.dataDir, modelCacheDir: deps.env.modelCacheDir };
    const opts = { signal: ctx.cancellationSignal, onStep: (step: object) => ctx.heartbeat(step) };
    const train = () => failingAs(rules, () => trainPolicy(input, training, opts));
    return heartbeating(train, 5_000, () => ({ phase: 'trainer running' }));
  },
});
