import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { ActivityDeps } from '../../src/activities/deps.js';
import { createRewardActivities } from '../../src/activities/rewards.js';
import { createRolloutActivities } from '../../src/activities/rollouts.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { parseRunConfig } from '../../src/config/run.js';
import { rewardsFileSchema } from '../../src/contracts/rewards.js';
import { rolloutOutcomeRecordSchema } from '../../src/contracts/rollout-outcome.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { objectStoreLogSink } from '../../src/rollouts/log-sink.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startGateway, type RunningGateway } from '../gateway/harness.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const RUN = 'run-two-workers';
const env = () => new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });

/**
 * Two cpu workers with their own data dirs and rollout roots, sharing only S3 (and the gateway): worker A runs the
 * rollouts in sandboxes, worker B scores them with a command reward over the workdir. B never sees A's files.
 */
describe('file-reading rewards are scored where the files are', () => {
  let services: TestServices;
  let store: ObjectStore;
  let gateway: RunningGateway;
  let dir: string;

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-two-workers' });
    await store.ensureBucket();
    dir = mkdtempSync(path.join(os.tmpdir(), 'volt-two-workers-'));
    // No model calls happen: the agents only write files.
    gateway = await startGateway(store, dir, 'http://127.0.0.1:9');
    writeFileSync(
      path.join(dir, 'train.jsonl'),
      ['t0', 't1'].map((id) => JSON.stringify({ id, input: { write: id === 't1' } })).join('\n'),
    );
  });
  after(async () => {
    await gateway?.close();
    await services?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const workerDeps = (name: string): ActivityDeps =>
    ({
      store,
      gateway: gateway.admin,
      taskSets: new PinnedTaskSets(store, dir),
      python: 'python3',
      env: {},
      runner: new LocalRunner({
        root: path.join(dir, name, 'rollouts'),
        logs: objectStoreLogSink(store),
        hide: [path.join(dir, name)],
      }),
    }) as unknown as ActivityDeps;

  it('worker A scores a command reward right after each agent exits; worker B computes rewards from S3 alone', async () => {
    const config = parseRunConfig({
      runId: RUN,
      seed: 1,
      tasks: { trainFile: 'train.jsonl', evalFile: 'train.jsonl' },
      // The agent writes answer.txt only for task t1 (its VOLT_TASK says so); the check looks for it.
      agent: { command: ['/bin/sh', '-c', 'case "$VOLT_TASK" in *true*) echo 42 > answer.txt;; esac'] },
      rollouts: { groupSize: 2, concurrency: 2 },
      reward: { kind: 'command', command: ['test', '-f', 'answer.txt'] },
    });
    const tasks = [
      { taskId: 't0', groupId: 'g0', rolloutIds: ['g0-r0', 'g0-r1'] },
      { taskId: 't1', groupId: 'g1', rolloutIds: ['g1-r0', 'g1-r1'] },
    ];
    const a = workerDeps('worker-a');
    const { sha256: taskSet } = await (a.taskSets as PinnedTaskSets).pinFile('train.jsonl');
    const policy = { name: 'base', checkpointKey: null, sha256: null, iteration: null };
    const launch = createRolloutActivities(a).launchRollouts;
    const launched: Awaited<ReturnType<typeof launch>> = await env().run(launch, {
      config,
      iteration: 0,
      mode: 'train' as const,
      label: 'train',
      policy,
      taskSet,
      sampling: null,
      tasks,
    });
    assert.deepEqual(
      launched.results.map((r) => r.outcome),
      Array(4).fill('succeeded'),
    );
    const record = await store.getJson(keys.rolloutOutcome(RUN, 0, 'g1-r0'), rolloutOutcomeRecordSchema);
    assert.deepEqual(record.workdirScores, { command: { value: 1, parts: { command: 1 }, flags: [] } });
    // A keeps nothing on its disk once the attempt is scored; B has never seen A's files.
    assert.equal(existsSync(path.join(dir, 'worker-a', 'rollouts', RUN, '000000', 'g1-r0', 'attempt-0')), false);
    rmSync(path.join(dir, 'worker-a'), { recursive: true, force: true });

    const b = workerDeps('worker-b');
    const compute = createRewardActivities(b).computeRewards;
    const scored: Awaited<ReturnType<typeof compute>> = await env().run(compute, {
      config,
      iteration: 0,
      mode: 'train' as const,
      label: 'train',
      taskSet,
      results: launched.results,
    });
    const file = await store.getJson(scored.rewardsKey, rewardsFileSchema);
    assert.equal(scored.scored, 4, `every rollout scored: ${JSON.stringify(file.rollouts.map((r) => r.flags))}`);
    assert.deepEqual(
      file.rollouts.map((r) => [r.rolloutId, r.reward]),
      [
        ['g0-r0', 0],
        ['g0-r1', 0],
        ['g1-r0', 1],
        ['g1-r1', 1],
      ],
    );
  });
});
