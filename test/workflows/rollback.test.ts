import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createConfigActivities } from '../../src/activities/config.js';
import type { ComputeRewardsInput, RewardsSummary } from '../../src/activities/rewards.js';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import { writeAlias } from '../../src/serving/run-alias.js';
import { connectClient } from '../../src/client/connect.js';
import { rollbackRun, startTrainingRun } from '../../src/client/runs.js';
import { loadEnv } from '../../src/config/env.js';
import { parseRunConfig, type RunConfig } from '../../src/config/run.js';
import { modelAliasSchema, type PolicyRef } from '../../src/contracts/policy.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { WORKFLOWS_PATH } from '../../src/workers/workers.js';
import { CPU_QUEUE, GPU_QUEUE } from '../../src/workflows/proxies.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const root = path.resolve(import.meta.dirname, '../..');
/** Held-out scores: the base 0.2, iteration 0's candidate 0.5 (promoted), later candidates 0.4 (below 0.5, above 0.2). */
const evalScore = (label: string, iteration: number) => (label === 'base' ? 0.2 : iteration === 0 ? 0.5 : 0.4);

/** Holds the rollouts of one iteration until released, so an update lands between two known points of the run. */
function hold() {
  let reach!: () => void;
  let release!: () => void;
  return {
    reached: new Promise<void>((r) => (reach = r)),
    released: new Promise<void>((r) => (release = r)),
    reach: () => reach(),
    release: () => release(),
  };
}

// Real Temporal dev server, real S3, the real trainingRun/trainingIteration/evaluation workflows; agents, model and trainer
// are FAKE stub activities (scripted scores), since what is under test is the workflow's promotion and rollback rule.
// The serving side (alias written, <run>-best unloaded) runs on the real model server in test/serving/rollback-to-base.test.ts.
void describe('rollback is a workflow update: the run owns "best"', { timeout: 300_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-rollback-test' });
    await store.ensureBucket();
  });
  after(async () => services?.stop());

  void it('rolls back to the base model and to the previous promotion; the next candidate is compared against the rolled-back score', async () => {
    const holds = new Map([
      [1, hold()],
      [2, hold()],
    ]);
    const served: string[] = [];
    const activities = {
      ...createConfigActivities({ taskSets: new PinnedTaskSets(store, root) }),
      async servePolicy(): Promise<void> {},
      async launchRollouts(input: LaunchRolloutsInput) {
        const h = input.mode === 'train' ? holds.get(input.iteration) : undefined;
        if (h) {
          h.reach();
          await h.released;
        }
        return {
          results: input.tasks.flatMap((t) =>
            t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
          ),
        };
      },
      async computeRewards(input: ComputeRewardsInput): Promise<RewardsSummary> {
        const meanReward = input.mode === 'eval' ? evalScore(input.label, input.iteration) : 0.5;
        return {
          meanReward,
          rewardSum: meanReward * input.results.length,
          scored: input.results.length,
          infraFailed: 0,
          unscored: [],
          rewardsKey: keys.rewards(input.config.runId, input.iteration),
        };
      },
      async buildBatch(input: { config: RunConfig; iteration: number }) {
        return {
          samples: 4,
          tokens: 100,
          batchKey: keys.batch(input.config.runId, input.iteration),
          manifestKey: keys.batchManifest(input.config.runId, input.iteration),
          dropReasons: '',
        };
      },
      async trainPolicy(input: { config: RunConfig; iteration: number }) {
        const sha256 = String(input.iteration + 1).repeat(64);
        const policy: PolicyRef = {
          name: `it${input.iteration}`,
          checkpointKey: keys.checkpoint(sha256),
          sha256,
          iteration: input.iteration,
        };
        return { policy, metrics: { loss: 0.1 } };
      },
      async promoteCheckpoint(input: { config: RunConfig; iteration: number; policy: PolicyRef; score: number }) {
        served.push(`promote ${input.policy.name}`);
        await writeAlias(store, input.config.runId, {
          policy: input.policy,
          score: input.score,
          iteration: input.iteration,
          at: new Date().toISOString(),
        });
      },
      async rollbackCheckpoint(input: {
        config: RunConfig;
        to: { policy: PolicyRef; score: number; iteration: number | null };
      }) {
        served.push(`rollback ${input.to.policy.name}`);
        await writeAlias(store, input.config.runId, { ...input.to, at: new Date().toISOString() });
      },
    };
    const config = parseRunConfig({
      runId: 'rollback-run',
      iterations: 3,
      agent: { command: ['true'] },
      tasks: { trainFile: 'examples/calculator/tasks/train.jsonl', evalFile: 'examples/calculator/tasks/eval.jsonl' },
      rollouts: { groupSize: 2, tasksPerIteration: 2 },
      reward: { kind: 'numeric_match' },
      eval: { tasks: 2, promoteMargin: 0 },
    });
    const connection = await NativeConnection.connect({ address: services.temporalAddress });
    const common = { connection, namespace: services.namespace, activities };
    const workers = [
      await Worker.create({ ...common, taskQueue: CPU_QUEUE, workflowsPath: WORKFLOWS_PATH }),
      await Worker.create({ ...common, taskQueue: GPU_QUEUE }),
    ];
    const running = Promise.all(workers.map((w) => w.run()));
    const { client, close } = await connectClient(loadEnv({ ...services.env }, root));
    let status: RunStatus;
    try {
      const { handle } = await startTrainingRun(client, config);
      await holds.get(1)!.reached; // iteration 0 promoted it0 (0.5 > 0.2)
      await assert.rejects(
        rollbackRun(client, config.runId, { to: 7 }),
        /iteration 7 promoted nothing \(promotions: 0\)/,
      );
      await assert.rejects(rollbackRun(client, config.runId, { to: 'latest' as never }), /rollback\.to: expected/);
      const toBase = await rollbackRun(client, config.runId, { to: 'base' });
      assert.deepEqual([toBase.iteration, toBase.best.score, toBase.best.policy.sha256], [null, 0.2, null]);
      holds.get(1)!.release(); // it1 scores 0.4: above the rolled-back 0.2, so it is promoted (it would not beat 0.5)

      await holds.get(2)!.reached;
      const previous = await rollbackRun(client, config.runId, { to: 'previous' });
      assert.deepEqual([previous.iteration, previous.best.score, previous.best.policy.name], [0, 0.5, 'it0']);
      holds.get(2)!.release(); // it2 scores 0.4 < 0.5: not promoted
      status = await handle.result();
    } finally {
      for (const h of holds.values()) h.release();
      for (const w of workers) w.shutdown();
      await running;
      await connection.close();
      await close();
    }
    assert.deepEqual(
      status.history.map((h) => [h.iteration, h.evalScore, h.promoted]),
      [
        [0, 0.5, true],
        [1, 0.4, true],
        [2, 0.4, false],
      ],
    );
    assert.deepEqual([status.best?.policy.name, status.best?.score], ['it0', 0.5]);
    assert.deepEqual(served, ['promote it0', 'rollback smollm2-135m-instruct', 'promote it1', 'rollback it0']);
    const alias = await store.getJson(keys.modelAlias(config.runId, 'best'), modelAliasSchema);
    assert.deepEqual(
      [alias.current.policy.name, alias.current.iteration, alias.servedAs],
      ['it0', 0, 'rollback-run-best'],
    );
    assert.deepEqual(
      alias.history.map((h) => h.policy.name),
      ['it0', 'smollm2-135m-instruct', 'it1'],
    );
  });
});
