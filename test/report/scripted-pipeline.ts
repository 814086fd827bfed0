import path from 'node:path';
import { createConfigActivities } from '../../src/activities/config.js';
import type { ComputeRewardsInput, RewardsSummary } from '../../src/activities/rewards.js';
import { rewardsKeyFor } from '../../src/rewards/score-rollouts.js';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import { writeAlias } from '../../src/serving/run-alias.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import type { RunConfig } from '../../src/config/run.js';
import { keys } from '../../src/storage/keys.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { span } from './synthetic-run.js';
import type { RewardsFile } from '../../src/contracts/rewards.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { callRecordLine } from '../helpers/stored-spans.js';

const root = path.resolve(import.meta.dirname, '../..');

/** Held-out tasks (of 4) each policy gets right: base 1, iteration 0's candidate 2 (promoted), later ones 1. */
const evalCorrect = (label: string, iteration: number) => (label === 'base' ? 1 : iteration === 0 ? 2 : 1);
/** Train reward of rollout gT-rK: the first of each group fails, the rest succeed. */
const trainReward = (rolloutId: string) => (rolloutId.endsWith('-r0') ? 0 : 1);

/**
 * The pipeline's activities with the expensive parts scripted (agents, model, trainer — the pipeline e2e test runs
 * those for real), so the real workflows run in seconds and leave in the real object store what the report reads.
 * Config validation and task listing are the real activities. `gate` holds a run's iteration-1 rollouts until released.
 */
export function scriptedPipeline(store: ObjectStore, gate: (runId: string, iteration: number) => Promise<void>) {
  return {
    ...createConfigActivities({ taskSets: new PinnedTaskSets(store, root) }),
    async servePolicy(_: { policy: PolicyRef }): Promise<void> {},
    async launchRollouts(input: LaunchRolloutsInput) {
      const { config, iteration, mode } = input;
      if (mode === 'train') await gate(config.runId, iteration);
      const ids = input.tasks.flatMap((t) => t.rolloutIds);
      for (const rolloutId of ids) {
        const s = {
          ...span(rolloutId, 0, [{ role: 'user', content: `task of ${rolloutId}` }], `answer of ${rolloutId}`),
          runId: config.runId,
          iteration,
          attempt: 0,
          mode,
          servedBy: { model: input.policy.name, version: input.policy.sha256?.slice(0, 12) ?? null },
        };
        const key = keys.span({ runId: config.runId, iteration, rolloutId, attempt: 0 }, 0);
        await store.putBytes(key, Buffer.from(callRecordLine(s)));
      }
      return { results: ids.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })) };
    },
    async computeRewards(input: ComputeRewardsInput): Promise<RewardsSummary> {
      const { config, iteration, mode, label } = input;
      const rollouts: RewardsFile['rollouts'] = input.results.map((r, i) => ({
        rolloutId: r.rolloutId,
        attempt: 0,
        taskId: `t${i}`,
        taskKind: null,
        groupId: r.rolloutId.split('-')[0]!,
        outcome: r.outcome,
        reward: mode === 'eval' ? Number(i < evalCorrect(label, iteration)) : trainReward(r.rolloutId),
        parts: {},
        flags: [],
        error: null,
      }));
      const meanReward = rollouts.reduce((a, r) => a + r.reward!, 0) / rollouts.length;
      const rewardsKey = rewardsKeyFor(config, iteration, mode, label);
      await store.putJson(rewardsKey, {
        mode,
        label,
        meanReward,
        scored: rollouts.length,
        infraFailed: 0,
        rollouts,
      } satisfies RewardsFile);
      return {
        meanReward,
        rewardSum: meanReward * rollouts.length,
        scored: rollouts.length,
        infraFailed: 0,
        unscored: [],
        rewardsKey,
      };
    },
    async buildBatch(input: { config: RunConfig; iteration: number }) {
      const samples = input.config.rollouts.groupSize * input.config.rollouts.tasksPerIteration;
      return {
        samples,
        tokens: samples * 50,
        batchKey: keys.batch(input.config.runId, input.iteration),
        manifestKey: keys.batchManifest(input.config.runId, input.iteration),
        dropReasons: '',
      };
    },
    async trainPolicy(input: { config: RunConfig; iteration: number }) {
      const sha256 = String(input.iteration).repeat(64);
      const policy: PolicyRef = {
        name: `${input.config.runId}-it${input.iteration}`,
        checkpointKey: keys.checkpoint(sha256),
        sha256,
        iteration: input.iteration,
      };
      return { policy, metrics: { loss: 0.5 - input.iteration / 10, kl: 0.01 * (input.iteration + 1), steps: 1 } };
    },
    async promoteCheckpoint(input: {
      config: RunConfig;
      iteration: number;
      policy: PolicyRef;
      score: number;
    }): Promise<void> {
      await writeAlias(store, input.config.runId, {
        policy: input.policy,
        score: input.score,
        iteration: input.iteration,
        at: new Date().toISOString(),
      });
    },
  };
}
