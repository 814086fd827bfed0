import { adaptersOf } from '../contracts/policy-set.js';
import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import type { LaunchedRollout, RolloutOutcomeRecord } from '../contracts/rollout-outcome.js';
import type { PinnedTaskSets } from '../tasks/pinned-task-sets.js';
import type { KubeRunnerConfigInput } from './kube-config.js';
import { priorOutcomes } from './rollout-records.js';
import { runRollouts, type RunRolloutsDeps } from './run-rollouts.js';
import type { RolloutRunner } from './spec.js';

export interface LaunchRolloutsInput {
  config: RunConfig;
  iteration: number;
  /** Only whether these rollouts train: 'eval' rollouts are scored but never put in a batch. */
  mode: 'train' | 'eval';
  label: string;
  policy: PolicyRef;
  /** The pinned task set (sha256, keys.taskSet) the task ids belong to. */
  taskSet: string | null;
  /** Sampling the gateway imposes on every call (e.g. greedy evaluation); null keeps the agent's own. */
  sampling: { temperature: number } | null;
  tasks: { taskId: string; groupId: string; rolloutIds: string[] }[];
  /** The prompt overlay the gateway applies to every call of these rollouts; null or version 0: the agent's own. */
  promptOverlay?: { version: number } | null;
  /** Rollouts whose final attempt was this one run again as a new attempt (an evaluation's unscored rollouts). */
  rerun?: { rolloutId: string; attempt: number }[];
}

export interface LaunchRolloutsDeps extends Omit<RunRolloutsDeps, 'runner' | 'servePolicy'> {
  taskSets: Pick<PinnedTaskSets, 'load'>;
  /** The embedded runner (local processes). */
  runner: RolloutRunner;
  /** The Kubernetes Jobs runner for runs with rollouts.runner = 'kubernetes'. */
  kubeRunner: (config: KubeRunnerConfigInput) => RolloutRunner;
  /** Waits for the model server and serves the policy again (it may have restarted and lost its adapters). */
  servePolicy: (policy: PolicyRef, signal: AbortSignal) => Promise<void>;
}

export interface LaunchProgress {
  total: number;
  done: number;
  reused: number;
  byOutcome: Record<string, number>;
}

/**
 * Run every rollout of the list (run-rollouts.ts), each with its own gateway token, retrying only infra failures as
 * new attempts. Idempotent: rollouts with an outcome record are reused; an attempt that was cut off by a crash is
 * abandoned and the rollout runs again as the next attempt. `retried`: an earlier try of this launch failed.
 */
export async function launchRollouts(
  input: LaunchRolloutsInput,
  deps: LaunchRolloutsDeps,
  opts: { signal: AbortSignal; retried: boolean; onProgress: (progress: LaunchProgress) => void },
): Promise<LaunchedRollout[]> {
  const { config, iteration } = input;
  const { byId } = await deps.taskSets.load(input.taskSet);
  const jobs = input.tasks.flatMap((t) =>
    t.rolloutIds.map((rolloutId) => ({ taskId: t.taskId, groupId: t.groupId, rolloutId })),
  );
  const progress: LaunchProgress = { total: jobs.length, done: 0, reused: 0, byOutcome: {} };
  const count = (record: RolloutOutcomeRecord) => {
    progress.done += 1;
    progress.byOutcome[record.final.outcome] = (progress.byOutcome[record.final.outcome] ?? 0) + 1;
    opts.onProgress({ ...progress });
  };
  opts.onProgress({ ...progress });
  // Agents a dead worker left running on this machine are killed and their tokens closed before new ones start.
  await deps.runner.reapAbandoned?.((token) => deps.gateway.close(token));
  // A retried launch may follow a model server restart (which drops adapters) that the workflow's servePolicy
  // preceded. The base model needs no re-serving: if the server is still down, the attempts fail upstream and
  // each retried attempt waits for it (run-rollouts.ts), so a launch retried for another reason starts at once.
  if (opts.retried && adaptersOf(input.policy).length > 0) await deps.servePolicy(input.policy, opts.signal);
  const { reused, pending } = await priorOutcomes(deps.store, config.runId, iteration, jobs, input.rerun ?? []);
  progress.reused = reused.size;
  for (const record of reused.values()) count(record);
  const runner =
    config.rollouts.runner === 'kubernetes' && config.rollouts.kubernetes
      ? deps.kubeRunner(config.rollouts.kubernetes)
      : deps.runner;
  const ran = await runRollouts(
    {
      config,
      iteration,
      mode: input.mode,
      policy: input.policy,
      sampling: input.sampling,
      promptOverlay: input.promptOverlay ?? null,
      tasks: byId,
      jobs: pending,
    },
    { ...deps, runner },
    { signal: opts.signal, onRecord: count },
  );
  return jobs.map((job) => {
    const record = (reused.get(job.rolloutId) ?? ran.get(job.rolloutId))!;
    return { rolloutId: job.rolloutId, attempt: record.final.ref.attempt, outcome: record.final.outcome };
  });
}
