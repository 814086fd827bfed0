import { roleRoutes } from '../contracts/team.js';
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import {
  rolloutOutcomeRecordSchema,
  rolloutStartedSchema,
  type ProtectedSnapshot,
  type RolloutOutcomeRecord,
  type WorkdirScore,
} from '../contracts/rollout-outcome.js';
import { runnerResultSchema, type RolloutRef, type RunnerResult } from '../contracts/rollout.js';
import type { Task } from '../contracts/task.js';
import type { GatewayAdminClient } from '../gateway/admin-client.js';
import { evidenceFromSpans } from '../rewards/evidence.js';
import { needsFileHashes, prepareReward, scoreWorkdirParts, workdirCommands } from '../rewards/registry.js';
import { keys } from '../storage/keys.js';
import { resolveAgentCommand } from './agent-command.js';
import { closingRunner } from './closing-runner.js';
import { runWithRetries } from './retries.js';
import { nextAttempt, type RolloutJob, type RolloutRecordStore } from './rollout-records.js';
import { Semaphore } from './semaphore.js';
import type { RolloutRunner } from './spec.js';
import { KUBE_WORKSPACE } from './kube-job.js';
import { runTaskSetup } from './task-setup.js';

export interface RunRolloutsInput {
  config: RunConfig;
  iteration: number;
  /** Only whether these rollouts train: 'eval' rollouts are scored but never put in a batch. */
  mode: 'train' | 'eval';
  policy: PolicyRef;
  /** Sampling the gateway imposes on every call (e.g. greedy evaluation); null keeps the agent's own. */
  sampling: { temperature: number } | null;
  /** The prompt overlay the gateway applies to every call; null or version 0: the agent's own prompt. */
  promptOverlay: { version: number } | null;
  /** The pinned task set the jobs' task ids belong to. */
  tasks: ReadonlyMap<string, Task>;
  jobs: readonly RolloutJob[];
}

export interface RunRolloutsDeps {
  store: RolloutRecordStore;
  gateway: Pick<GatewayAdminClient, 'register' | 'close'>;
  /** The runner the run config picks (local processes or Kubernetes Jobs); each attempt's token is closed after it. */
  runner: RolloutRunner;
  python: string;
  /** Where file-reading rewards read their keys from (an LLM judge's API key). */
  env: Record<string, string | undefined>;
  /** Serves the policy again before an attempt that follows failed model calls: a restarted model server lost its adapter. */
  servePolicy?: (policy: PolicyRef, signal: AbortSignal) => Promise<void>;
}

/**
 * Run every job through the runner, at most `rollouts.concurrency` at once, each attempt with its own gateway token,
 * retrying only infra failures as new attempts; file-reading rewards are scored right after each agent exits. Each
 * rollout's attempts and its outcome record are stored as it ends (`onRecord` then); the records come back by
 * rollout id. Every job has settled before this rejects, so nothing keeps running behind a retry.
 */
export async function runRollouts(
  input: RunRolloutsInput,
  deps: RunRolloutsDeps,
  opts: { signal: AbortSignal; onRecord?: (record: RolloutOutcomeRecord) => void },
): Promise<Map<string, RolloutOutcomeRecord>> {
  const { config, iteration, mode, policy } = input;
  // Every waiting and running rollout listens on the activity's one signal (each removes its listeners when done):
  // a few listeners per rollout are expected, not the leak node warns about past 10.
  setMaxListeners(Math.max(10, 4 * input.jobs.length), opts.signal);
  const slots = new Semaphore(config.rollouts.concurrency);
  const baseDir = path.resolve(config.agent.cwd ?? '.');
  const runner = closingRunner(deps.runner, deps.gateway);
  // A pod scores with its image's Python, in its own /workspace; the local runner with the worker's.
  const kube = config.rollouts.runner === 'kubernetes' ? config.rollouts.kubernetes : undefined;
  const python = kube ? kube.python : deps.python;
  const settled = await Promise.allSettled(
    input.jobs.map(async (job) => {
      const release = await slots.acquire(opts.signal);
      try {
        const record = await runOne(job);
        opts.onRecord?.(record);
        return record;
      } finally {
        release();
      }
    }),
  );
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return new Map(
    settled.map((s) => {
      const record = (s as PromiseFulfilledResult<RolloutOutcomeRecord>).value;
      return [record.rolloutId, record];
    }),
  );

  async function runOne(job: RolloutJob): Promise<RolloutOutcomeRecord> {
    const runId = config.runId;
    const task = input.tasks.get(job.taskId);
    if (!task) throw new Error(`task ${job.taskId} is not in the task set`);
    const firstAttempt = await nextAttempt(deps.store, runId, iteration, job.rolloutId);
    const snapshots: Record<string, ProtectedSnapshot> = {};
    const workdirScores = new Map<number, Record<string, WorkdirScore>>();
    const attempts = await runWithRetries(
      runner,
      {
        ref: { runId, iteration, rolloutId: job.rolloutId, attempt: firstAttempt },
        taskId: job.taskId,
        groupId: job.groupId,
        mode,
        taskInput: task.input,
        agent: {
          command: resolveAgentCommand(config.agent.command, baseDir),
          // An explicit agent.cwd is readable like the worker's cwd (which the runner always binds).
          readOnly: [...new Set([...(config.agent.cwd ? [baseDir] : []), ...config.agent.readOnlyPaths])],
        },
        timeoutMs: config.agent.timeoutSec * 1000,
        envAllowList: [...config.agent.envAllowList],
        env: { ...config.agent.env },
        sandbox: config.rollouts.sandbox,
        limits: { ...config.rollouts.limits },
        hiddenFiles: { ...task.hidden?.files },
        scoringCommands: kube ? workdirCommands(config.reward, python, KUBE_WORKSPACE) : [],
        setup: kube && task.setup ? resolveAgentCommand(task.setup.command, baseDir) : null,
        reportFiles: kube !== undefined && needsFileHashes(config.reward),
      },
      {
        maxAttempts: config.rollouts.maxAttempts,
        firstAttempt,
        signal: opts.signal,
        register: async (ref: RolloutRef, previous?: RunnerResult) => {
          // Only a failure on the model side can mean a restarted model server; a failed task setup needs no re-serving.
          if (previous?.upstreamFailures) await deps.servePolicy?.(policy, opts.signal);
          await deps.store.putJson(
            keys.rolloutStarted(ref),
            { startedAt: new Date().toISOString(), policy: policy.name },
            rolloutStartedSchema,
          );
          const budget = config.agent.budget;
          const { token, baseUrl } = await deps.gateway.register({
            ...ref,
            mode,
            policyModel: policy.name,
            sampling: input.sampling,
            promptOverlay: input.promptOverlay,
            budget,
            hostedTools: config.agent.hostedTools,
            // Agent roles: a trained role's calls go to its policy, a frozen role's to the base or its fixed adapter.
            team: config.team && {
              roles: roleRoutes(config.team, policy, config.model.base),
              unmatched: config.team.unmatched === 'refuse' ? 'refuse' : { model: config.model.base },
            },
            // Distillation: the teacher serves the warm-start iterations' training rollouts; evaluation is the student's.
            teacher: mode === 'train' && iteration < config.batch.warmStartIterations ? config.teacher : undefined,
          });
          return { token, baseUrl };
        },
        prepareWorkdir: async (workdir) => {
          await runTaskSetup(task, workdir, baseDir);
          Object.assign(snapshots, await prepareReward(config.reward, workdir));
        },
        filesBefore: async (files) => Object.assign(snapshots, await prepareReward(config.reward, files)),
        afterAgent: async (workdir, result, exec, files) => {
          const evidence = evidenceFromSpans(result, [], { workdir, snapshots });
          workdirScores.set(
            result.ref.attempt,
            await scoreWorkdirParts(config.reward, task, evidence, {
              python,
              env: deps.env,
              signal: opts.signal,
              exec,
              files,
            }),
          );
        },
      },
    );
    const final = attempts[attempts.length - 1]!;
    for (const a of attempts) await deps.store.putJson(keys.rolloutResult(a.ref), a, runnerResultSchema);
    const record: RolloutOutcomeRecord = {
      rolloutId: job.rolloutId,
      taskId: job.taskId,
      groupId: job.groupId,
      final,
      attempts: [
        ...(job.earlier ?? []),
        ...attempts.map((a) => ({ attempt: a.ref.attempt, outcome: a.outcome, detail: a.detail })),
      ],
      snapshots,
      workdirScores: workdirScores.get(final.ref.attempt),
    };
    await deps.store.putJson(keys.rolloutOutcome(runId, iteration, job.rolloutId), record, rolloutOutcomeRecordSchema);
    return record;
  }
}
