import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { ActivityDeps } from '../../src/activities/deps.js';
import { createRewardActivities, type ComputeRewardsInput } from '../../src/activities/rewards.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { parseRunConfig } from '../../src/config/run.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { objectStoreLogSink } from '../../src/rollouts/log-sink.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import type { RolloutOutcomeRecord } from '../../src/contracts/rollout-outcome.js';
import { rewardsFileSchema } from '../../src/contracts/rewards.js';

const RUN = 'run-release';
const ids = ['t0-r0', 't0-r1'];

describe('computeRewards releases the kept workdirs once the rewards file is stored', () => {
  let services: TestServices;
  let store: ObjectStore;
  let dir: string;
  let runner: LocalRunner;
  type Activities = ReturnType<typeof createRewardActivities>;
  const run = (activities: Activities, input: ComputeRewardsInput): ReturnType<Activities['computeRewards']> =>
    new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') }).run(activities.computeRewards, input);

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-rewards-release' });
    await store.ensureBucket();
    dir = mkdtempSync(path.join(os.tmpdir(), 'volt-release-'));
    writeFileSync(
      path.join(dir, 'train.jsonl'),
      `${JSON.stringify({ id: 't0', input: { q: 'write answer.txt' }, kind: 'files' })}\n`,
    );
    runner = new LocalRunner({ root: path.join(dir, 'rollouts'), logs: objectStoreLogSink(store) });
  });
  after(async () => {
    await services?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('scores with a command reward in each workdir, deletes them, and a retry reuses the stored file', async () => {
    const config = parseRunConfig({
      runId: RUN,
      seed: 1,
      agent: { command: ['true'] },
      tasks: { trainFile: 'train.jsonl', evalFile: 'train.jsonl' },
      reward: { kind: 'command', command: ['test', '-f', 'answer.txt'] },
    });
    const workdirs = ids.map((rolloutId, i) => {
      const workdir = path.join(dir, 'rollouts', RUN, '000000', rolloutId, 'attempt-0', 'work');
      mkdirSync(workdir, { recursive: true });
      if (i === 1) writeFileSync(path.join(workdir, 'answer.txt'), '42');
      return workdir;
    });
    for (const [i, rolloutId] of ids.entries()) {
      const ref = { runId: RUN, iteration: 0, rolloutId, attempt: 0 };
      const record: RolloutOutcomeRecord = {
        rolloutId,
        taskId: 't0',
        groupId: 't0',
        attempts: [{ attempt: 0, outcome: 'succeeded', detail: null }],
        snapshots: {},
        final: {
          ref,
          taskId: 't0',
          groupId: 't0',
          sandbox: 'none',
          mode: 'train',
          outcome: 'succeeded',
          exitCode: 0,
          signal: null,
          durationMs: 1,
          outputText: null,
          stdoutKey: keys.rolloutLog(ref, 'stdout'),
          stderrKey: keys.rolloutLog(ref, 'stderr'),
          detail: null,
          workdir: workdirs[i]!,
        },
      };
      await store.putJson(keys.rolloutOutcome(RUN, 0, rolloutId), record);
    }
    // The second rollout's agent posted a reward for its first call (credit per turn) beside one for the rollout.
    await store.putJson(keys.agentRewards({ runId: RUN, iteration: 0, rolloutId: ids[1]!, attempt: 0 }), {
      rewards: [{ value: 0.5, span: 0 }, { value: 3 }],
    });
    const taskSets = new PinnedTaskSets(store, dir);
    const { sha256: taskSet } = await taskSets.pinFile('train.jsonl');
    const deps = { store, runner, taskSets, python: 'python3', env: {} } as unknown as ActivityDeps;
    const activities = createRewardActivities(deps);
    const input: ComputeRewardsInput = {
      config,
      iteration: 0,
      mode: 'train',
      label: 'train',
      taskSet,
      results: ids.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' })),
    };

    const first = await run(activities, input);
    assert.deepEqual({ scored: first.scored, meanReward: first.meanReward }, { scored: 2, meanReward: 0.5 });
    const file = await store.getJson(first.rewardsKey, rewardsFileSchema);
    assert.deepEqual(
      file.rollouts.map((r) => r.reward),
      [0, 1],
      'the check ran in each workdir',
    );
    assert.deepEqual(
      file.rollouts.map((r) => r.taskKind),
      ['files', 'files'],
      'each score records its task kind',
    );
    assert.deepEqual(
      file.rollouts.map((r) => [r.durationMs, r.calls, r.completionTokens]),
      [
        [1, 0, 0],
        [1, 0, 0],
      ],
      'each score records its wall time, and the calls and tokens of its spans (none here)',
    );
    assert.deepEqual(
      file.rollouts.map((r) => r.turnRewards),
      [undefined, [{ span: 0, value: 0.5 }]],
      'the turn rewards the agent posted are kept for the batch, the rollout reward is not among them',
    );
    assert.deepEqual(first.byKind, { files: { rewardSum: 1, scored: 2, tasks: 2 } });
    for (const rolloutId of ids)
      assert.equal(existsSync(path.join(dir, 'rollouts', RUN, '000000', rolloutId)), false, `${rolloutId} released`);

    const retry = await run(activities, input);
    assert.deepEqual(retry, first, 'a retry reuses the stored scores instead of re-running checks in deleted workdirs');
    assert.deepEqual(
      (await store.getJson(first.rewardsKey, rewardsFileSchema)).rollouts.map((r) => r.reward),
      [0, 1],
    );
  });
});
