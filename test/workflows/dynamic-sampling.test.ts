import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ComputeRewardsInput } from '../../src/activities/rewards.js';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import { parseRunConfig, type RunConfig } from '../../src/config/run.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { extraGroupsFor } from '../../src/workflows/dynamic-sampling.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import { sampleTaskIds } from '../../src/workflows/sampling.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { startWorkflowEnv, withStubWorkers, type CpuStubs, type GpuStubs } from './workflow-env.js';

type Env = Awaited<ReturnType<typeof startWorkflowEnv>>;
const TASKS = ['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7'];
const SEED = 5;
// The iteration's seeded order of all training tasks: its first tasksPerIteration are the iteration's own groups.
const ORDER = sampleTaskIds(TASKS, TASKS.length, SEED, 0);

function runConfig(runId: string, dynamicSampling: object | undefined): RunConfig {
  return parseRunConfig({
    runId,
    seed: SEED,
    iterations: 1,
    agent: { command: ['agent'] },
    tasks: { trainFile: 'train.jsonl', evalFile: 'eval.jsonl' },
    rollouts: { groupSize: 2, tasksPerIteration: 2, ...(dynamicSampling && { dynamicSampling }) },
    reward: { kind: 'string_match', source: 'output_file' },
    eval: { everyIterations: 0 },
  }) as RunConfig;
}

/**
 * Stub activities: a group is informative (its rewards differ) exactly when its task is in `informative`; what is
 * under test is the iteration's loop, which sees only the group counts computeRewards reports, as from the real one.
 */
function stubs(informative: Set<string>) {
  const calls = { train: [] as LaunchRolloutsInput[], rewards: [] as ComputeRewardsInput[], batches: 0 };
  const taskOfGroup = new Map<string, string>();
  const cpu: CpuStubs = {
    validateRunConfig: async (raw) => {
      const c = parseRunConfig(raw) as RunConfig;
      return { ...c, tasks: { ...c.tasks, trainSet: 'a'.repeat(64), evalSet: 'b'.repeat(64) } };
    },
    listTaskIds: async ({ limit }) => TASKS.slice(0, limit),
    launchRollouts: async (input) => {
      calls.train.push(input);
      for (const t of input.tasks) taskOfGroup.set(t.groupId, t.taskId);
      return {
        results: input.tasks.flatMap((t) =>
          t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
        ),
      };
    },
    computeRewards: async (input) => {
      calls.rewards.push(input);
      const groups = new Set(input.results.map((r) => r.rolloutId.split('-')[0]!));
      const good = [...groups].filter((g) => informative.has(taskOfGroup.get(g)!)).length;
      const scored = input.results.length;
      return {
        meanReward: 0.5,
        rewardSum: scored / 2,
        scored,
        infraFailed: 0,
        unscored: [],
        rewardsKey: 'rewards/0',
        groups: { total: groups.size, informative: good },
      };
    },
    buildBatch: async () => {
      calls.batches += 1;
      return { samples: 4, tokens: 100, batchKey: 'batch/0', manifestKey: 'manifest/0', dropReasons: '' };
    },
  };
  const gpu: GpuStubs = {
    servePolicy: async () => undefined,
    trainPolicy: async ({ iteration }) => {
      await new Promise((resolve) => setTimeout(resolve, 1_200)); // an update that takes time, for the iteration's timeline
      const policy: PolicyRef = {
        name: `cand-${iteration}`,
        checkpointKey: `ckpt/${iteration}`,
        sha256: `sha-${iteration}`,
        iteration,
      };
      return { policy, metrics: { loss: 0.5 } };
    },
  };
  return { cpu, gpu, calls };
}

void describe('rollouts.dynamicSampling: groups of other tasks until the batch has enough informative groups (stub activities)', () => {
  let env: Env;
  before(async () => (env = await startWorkflowEnv()));
  after(() => env?.env.teardown());

  void it(
    'rolls out further tasks in the seeded order until the wanted informative groups are there, and says so',
    { timeout: 180_000 },
    async () => {
      // The iteration's own 2 groups tie; round 1 (2 tasks) finds 1 informative; round 2 finds the second and stops.
      const s = stubs(new Set([ORDER[3]!, ORDER[5]!]));
      const result = (await withStubWorkers(env, s, () =>
        env.env.client.workflow.execute('trainingRun', {
          taskQueue: CPU_QUEUE,
          workflowId: 'ds-run',
          args: [runConfig('ds-run', { maxExtraRounds: 5 })],
        }),
      )) as RunStatus;

      assert.deepEqual(
        s.calls.train.map((l) => l.tasks.map((t) => t.taskId)),
        [ORDER.slice(0, 2), ORDER.slice(2, 4), ORDER.slice(4, 6)],
      );
      assert.deepEqual(
        s.calls.train.map((l) => l.tasks.map((t) => t.groupId)),
        [
          ['g0', 'g1'],
          ['g2', 'g3'],
          ['g4', 'g5'],
        ],
      );
      assert.ok(s.calls.train.every((l) => l.mode === 'train' && l.label === 'train'));
      // One rewards file for the whole batch: each round scores every rollout so far.
      assert.deepEqual(
        s.calls.rewards.map((r) => r.results.length),
        [4, 8, 12],
      );
      assert.equal(s.calls.batches, 1);
      const h = result.history[0]!;
      assert.equal(h.rollouts, 12);
      assert.deepEqual(h.dynamicSampling, {
        wanted: 2,
        informativeBefore: 0,
        informative: 2,
        extraRounds: 2,
        extraGroups: 4,
        extraRollouts: 8,
      });
      // The timeline: seconds per phase from the workflow's clock (the 1.2 s update shows), and when the iteration ended.
      assert.deepEqual(Object.keys(h.timeline!.seconds).sort(), [
        'batch',
        'evaluating',
        'rewards',
        'rollouts',
        'sampling-tasks',
        'update',
      ]);
      assert.ok(
        h.timeline!.seconds.update! >= 1.1 && h.timeline!.seconds.update! < 60,
        `update took ${h.timeline!.seconds.update} s`,
      );
      assert.ok(Date.parse(h.timeline!.endedAt) > Date.now() - 600_000);
    },
  );

  void it(
    'stops at maxExtraRounds with what it has, and never reuses a task of the iteration',
    { timeout: 180_000 },
    async () => {
      const s = stubs(new Set());
      const result = (await withStubWorkers(env, s, () =>
        env.env.client.workflow.execute('trainingRun', {
          taskQueue: CPU_QUEUE,
          workflowId: 'ds-cap',
          args: [runConfig('ds-cap', { maxExtraRounds: 2, minInformativeGroups: 2 })],
        }),
      )) as RunStatus;
      const taskIds = s.calls.train.flatMap((l) => l.tasks.map((t) => t.taskId));
      assert.equal(s.calls.train.length, 3);
      assert.equal(new Set(taskIds).size, taskIds.length);
      assert.deepEqual(result.history[0]!.dynamicSampling, {
        wanted: 2,
        informativeBefore: 0,
        informative: 0,
        extraRounds: 2,
        extraGroups: 4,
        extraRollouts: 8,
      });
    },
  );

  void it(
    'without rollouts.dynamicSampling an iteration launches its own groups once',
    { timeout: 180_000 },
    async () => {
      const s = stubs(new Set());
      const result = (await withStubWorkers(env, s, () =>
        env.env.client.workflow.execute('trainingRun', {
          taskQueue: CPU_QUEUE,
          workflowId: 'ds-off',
          args: [runConfig('ds-off', undefined)],
        }),
      )) as RunStatus;
      assert.equal(s.calls.train.length, 1);
      assert.equal(result.history[0]!.dynamicSampling, null);
    },
  );
});

void it('a round asks for as many groups as the informative rate so far suggests, within tasksPerIteration and the tasks left', () => {
  assert.equal(extraGroupsFor(3, 0, 4, 6, 100), 6); // nothing informative yet: a full round
  assert.equal(extraGroupsFor(2, 1, 4, 6, 100), 6); // 1 in 4: 8 wanted, capped at tasksPerIteration
  assert.equal(extraGroupsFor(1, 2, 4, 6, 100), 2); // 1 in 2: 2 more
  assert.equal(extraGroupsFor(3, 0, 4, 6, 2), 2); // only 2 tasks left
});
