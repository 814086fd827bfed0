import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { RunConfig } from '../config/run.js';
import type { RolloutRef } from '../contracts/rollout.js';
import { FailureType } from '../contracts/failures.js';
import { evidenceFromSpans } from '../rewards/evidence.js';
import { prepareReward, scoreWorkdirParts } from '../rewards/registry.js';
import { runWithRetries } from '../rollouts/retries.js';
import { SandboxUnavailableError } from '../rollouts/sandbox-probe.js';
import { Semaphore } from '../rollouts/semaphore.js';
import { keys } from '../storage/keys.js';
import { resolveAgentCommand } from '../rollouts/agent-command.js';
import { closingRunner } from '../rollouts/closing-runner.js';
import { requireTaskSet } from './config.js';
import type { ActivityDeps } from './deps.js';
import { runTaskSetup } from '../rollouts/task-setup.js';
import type { ProtectedSnapshot, WorkdirScore } from '../contracts/rollout-outcome.js';
import type { PolicyRef } from '../contracts/policy.js';
import { rolloutOutcomeRecordSchema, rolloutStartedSchema, type LaunchedRollout } from '../contracts/rollout-outcome.js';
import { runnerResultSchema } from '../contracts/rollout.js';

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

export const createRolloutActivities = (deps: ActivityDeps) => ({
  /**
   * Run every rollout of the list through the runner (bounded by the runner's concurrency), each with its own
   * gateway token, retrying only infra failures as new attempts. Idempotent: rollouts with an outcome record are
   * reused; an attempt that was cut off by a crash is abandoned and the rollout runs again as the next attempt.
   */
  async launchRollouts(input: LaunchRolloutsInput): Promise<{ results: LaunchedRollout[] }> {
    const ctx = Context.current();
    const { config, iteration, mode, policy } = input;
    const runId = config.runId;
    const { byId } = await deps.taskSets.load(requireTaskSet(input.taskSet));
    const jobs = input.tasks.flatMap((t) => t.rolloutIds.map((rolloutId) => ({ ...t, rolloutId })));
    const progress = { total: jobs.length, done: 0, reused: 0, byOutcome: {} as Record<string, number> };
    const beat = () => ctx.heartbeat({ ...progress });
    const ticker = setInterval(beat, 2000);
    // Agents a dead worker left running on this machine are killed and their tokens closed before new ones start.
    await deps.runner.reapAbandoned?.((token) => deps.gateway.close(token));
    const rerun = new Map((input.rerun ?? []).map((r) => [r.rolloutId, r.attempt]));
    const slots = new Semaphore(config.rollouts.concurrency);
    const baseDir = path.resolve(config.agent.cwd ?? '.');
    const runner = closingRunner(
      config.rollouts.runner === 'kubernetes' && config.rollouts.kubernetes ? deps.kubeRunner(config.rollouts.kubernetes) : deps.runner,
      deps.gateway,
    );
    try {
      const settled = await Promise.allSettled(
        jobs.map(async (job): Promise<LaunchedRollout> => {
          const release = await slots.acquire(ctx.cancellationSignal);
          try {
            return await runOne(job);
          } finally {
            release();
          }
        }),
      );
      // Every job has settled before we fail, so nothing keeps running behind a retry of this activity.
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed?.reason instanceof SandboxUnavailableError) {
        throw ApplicationFailure.create({ type: FailureType.SandboxUnavailable, message: failed.reason.message, nonRetryable: true });
      }
      if (failed) throw failed.reason;
      return { results: settled.map((s) => (s as PromiseFulfilledResult<LaunchedRollout>).value) };
    } finally {
      clearInterval(ticker);
    }

    async function runOne(job: (typeof jobs)[number]): Promise<LaunchedRollout> {
      const outcomeKey = keys.rolloutOutcome(runId, iteration, job.rolloutId);
      let record = await deps.store.getJsonOrNull(outcomeKey, rolloutOutcomeRecordSchema);
      // A retry of this activity finds the record already past the attempt it was asked to rerun, and reuses it.
      const earlier = record && rerun.get(job.rolloutId) === record.final.ref.attempt ? record.attempts : null;
      if (earlier) record = null;
      if (record) progress.reused += 1;
      else {
        const task = byId.get(job.taskId);
        if (!task) throw new Error(`task ${job.taskId} is not in the task set`);
        const firstAttempt = await nextAttempt(deps, runId, iteration, job.rolloutId);
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
            agent: { command: resolveAgentCommand(config.agent.command, baseDir) },
            timeoutMs: config.agent.timeoutSec * 1000,
            envAllowList: [...config.agent.envAllowList],
            env: { ...config.agent.env },
            // File-reading rewards are scored in afterAgent, so nothing needs the workdir afterwards.
            keepWorkdir: false,
            sandbox: config.rollouts.sandbox,
            limits: { ...config.rollouts.limits },
          },
          {
            maxAttempts: config.rollouts.maxAttempts,
            firstAttempt,
            signal: ctx.cancellationSignal,
            register: async (ref: RolloutRef) => {
              await deps.store.putJson(keys.rolloutStarted(ref), { startedAt: new Date().toISOString(), policy: policy.name }, rolloutStartedSchema);
              // Configs recorded before budgets existed have none: unbounded, as they ran.
              const budget = config.agent.budget ?? null;
              const { token, baseUrl } = await deps.gateway.register({ ...ref, mode, policyModel: policy.name, sampling: input.sampling, promptOverlay: input.promptOverlay ?? null, budget });
              return { token, baseUrl };
            },
            prepareWorkdir: async (workdir) => {
              await runTaskSetup(task, workdir, baseDir);
              Object.assign(snapshots, await prepareReward(config.reward, workdir));
            },
            afterAgent: async (workdir, result) => {
              const evidence = evidenceFromSpans(result, [], { workdir, snapshots });
              workdirScores.set(result.ref.attempt, await scoreWorkdirParts(config.reward, task, evidence, { python: deps.python, env: process.env, signal: ctx.cancellationSignal }));
            },
          },
        );
        const final = attempts[attempts.length - 1]!;
        for (const a of attempts) await deps.store.putJson(keys.rolloutResult(a.ref), a, runnerResultSchema);
        record = {
          rolloutId: job.rolloutId,
          taskId: job.taskId,
          groupId: job.groupId,
          final,
          attempts: [...(earlier ?? []), ...attempts.map((a) => ({ attempt: a.ref.attempt, outcome: a.outcome, detail: a.detail }))],
          snapshots,
          workdirScores: workdirScores.get(final.ref.attempt),
        };
        await deps.store.putJson(outcomeKey, record, rolloutOutcomeRecordSchema);
      }
      progress.done += 1;
      progress.byOutcome[record.final.outcome] = (progress.byOutcome[record.final.outcome] ?? 0) + 1;
      beat();
      return { rolloutId: job.rolloutId, attempt: record.final.ref.attempt, outcome: record.final.outcome };
    }
  },
});

/** The attempt number after every attempt this rollout ever started (a crash leaves a started marker behind). */
async function nextAttempt(deps: ActivityDeps, runId: string, iteration: number, rolloutId: string): Promise<number> {
  let next = 0;
  for await (const o of deps.store.list(keys.rolloutAttempts(runId, iteration, rolloutId))) {
    const m = /attempt-(\d+)\//.exec(o.key);
    if (m) next = Math.max(next, Number(m[1]) + 1);
  }
  return next;
}
