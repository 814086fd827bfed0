import { Context } from '@temporalio/activity';
import { FailureType } from '../contracts/failures.js';
import type { LaunchedRollout } from '../contracts/rollout-outcome.js';
import { TaskSetError } from '../contracts/task.js';
import { launchRollouts, type LaunchProgress, type LaunchRolloutsInput } from '../rollouts/launch-rollouts.js';
import { SandboxUnavailableError } from '../rollouts/sandbox-probe.js';
import { serveAgain, servingDeps } from '../serving/serve-policy.js';
import type { ActivityDeps } from './deps.js';
import { failingAs, type FailureRule } from './failure-rules.js';
import { heartbeating } from './heartbeat.js';

export type { LaunchRolloutsInput };

const rules: FailureRule[] = [
  [SandboxUnavailableError, FailureType.SandboxUnavailable],
  [TaskSetError, FailureType.InvalidTaskSet],
];

export const createRolloutActivities = (deps: ActivityDeps) => {
  const launchDeps = {
    ...deps,
    env: process.env,
    // Built only when a retried launch serves a trained policy again (cheap: no connection until a call).
    servePolicy: (policy: LaunchRolloutsInput['policy'], signal: AbortSignal) =>
      serveAgain(servingDeps(deps.env, deps.store, deps.modelServer), policy, signal),
  };
  return {
    /** Run the rollouts (src/rollouts/launch-rollouts.ts), heartbeating their progress; idempotent across retries. */
    async launchRollouts(input: LaunchRolloutsInput): Promise<{ results: LaunchedRollout[] }> {
      const ctx = Context.current();
      let progress: LaunchProgress | undefined;
      const onProgress = (p: LaunchProgress) => ctx.heartbeat((progress = p));
      const opts = { signal: ctx.cancellationSignal, retried: ctx.info.attempt > 1, onProgress };
      const run = () => failingAs(rules, () => launchRollouts(input, launchDeps, opts));
      return { results: await heartbeating(run, 2_000, () => progress) };
    },
  };
};
