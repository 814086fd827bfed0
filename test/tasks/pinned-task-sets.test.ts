import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createConfigActivities } from '../../src/activities/config.js';
import type { ComputeRewardsInput, RewardsSummary } from '../../src/activities/rewards.js';
import type { LaunchRolloutsInput } from '../../src/activities/rollouts.js';
import { runCli } from '../../src/cli/run-cli.js';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { loadEnv } from '../../src/config/env.js';
import { parseRunConfig } from '../../src/config/run.js';
import { FailureType } from '../../src/contracts/failures.js';
import { canonicalTaskLines, TaskSetError } from '../../src/contracts/task.js';
import { CorruptObjectError } from '../../src/storage/errors.js';
import { sha256Bytes } from '../../src/storage/hash.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { WORKFLOWS_PATH } from '../../src/workers/workers.js';
import { CPU_QUEUE, GPU_QUEUE } from '../../src/workflows/proxies.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const tasks = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i}`,
    input: { q: `${prefix} question ${i}` },
    reference: { answer: i },
  }));
const jsonl = (ts: object[], sep = '\n') => ts.map((t) => JSON.stringify(t)).join(sep);

void describe('task sets are pinned by content in the object store when a run starts', { timeout: 300_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  let dir: string;
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-pinned-tasks' });
    await store.ensureBucket();
    dir = mkdtempSync(path.join(os.tmpdir(), 'volt-pinned-'));
  });
  after(async () => {
    await services?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  void it('stores validated tasks once by hash; a worker with no files reads them back; tampering and unknown hashes fail clearly', async () => {
    writeFileSync(path.join(dir, 'a.jsonl'), jsonl(tasks('t', 3)));
    writeFileSync(path.join(dir, 'b.jsonl'), `\n${jsonl(tasks('t', 3), '\r\n')}\n\n`);
    const pinner = new PinnedTaskSets(store, dir);
    const a = await pinner.pinFile('a.jsonl');
    assert.equal(a.sha256, sha256Bytes(canonicalTaskLines(tasks('t', 3))));
    assert.equal(
      (await pinner.pinFile('b.jsonl')).sha256,
      a.sha256,
      'the same tasks hash the same, whatever the file layout',
    );
    assert.ok(await store.stat(keys.taskSet(a.sha256)));

    const remote = new PinnedTaskSets(store, path.join(dir, 'no-such-dir'));
    assert.deepEqual((await remote.load(a.sha256)).tasks, tasks('t', 3));

    const unknown = 'f'.repeat(64);
    await assert.rejects(
      remote.load(unknown),
      (e: unknown) => e instanceof TaskSetError && e.message.includes(unknown),
    );
    await store.putBytes(keys.taskSet(unknown), Buffer.from('{"id":"x","input":{}}\n'));
    await assert.rejects(
      new PinnedTaskSets(store, dir).load(unknown),
      (e: unknown) => e instanceof CorruptObjectError && /content has sha256/.test(e.message),
    );

    writeFileSync(path.join(dir, 'bad.jsonl'), `${jsonl(tasks('t', 1))}\n{"id":"t9","input":"not an object"}\n`);
    await assert.rejects(
      pinner.pinFile('bad.jsonl'),
      (e: unknown) => e instanceof TaskSetError && /bad\.jsonl:2: input/.test(e.message),
    );
  });

  void it('eval.extraSets are pinned with the run: validateRunConfig fills in each set hash, a bad file fails naming its field', async () => {
    writeFileSync(path.join(dir, 'x-train.jsonl'), jsonl(tasks('xt', 2)));
    writeFileSync(path.join(dir, 'x-eval.jsonl'), jsonl(tasks('xe', 2)));
    writeFileSync(path.join(dir, 'x-b.jsonl'), jsonl(tasks('xb', 3)));
    const { validateRunConfig } = createConfigActivities({ taskSets: new PinnedTaskSets(store, dir) });
    const raw = {
      runId: 'extra-sets',
      agent: { command: ['true'] },
      reward: { kind: 'numeric_match' },
      tasks: { trainFile: 'x-train.jsonl', evalFile: 'x-eval.jsonl' },
      eval: { extraSets: [{ name: 'b', file: 'x-b.jsonl' }] },
    };
    const config = await validateRunConfig(raw);
    const b = config.eval.extraSets[0]!;
    assert.equal(b.set, sha256Bytes(canonicalTaskLines(tasks('xb', 3))));
    assert.deepEqual(
      (await new PinnedTaskSets(store, path.join(dir, 'no-such-dir')).load(b.set!)).tasks,
      tasks('xb', 3),
    );
    // A config that names the set by hash (what `volt train` starts the workflow with) needs no file.
    assert.equal(
      (await validateRunConfig({ ...raw, eval: { extraSets: [{ name: 'b', set: b.set }] } })).eval.extraSets[0]!.set,
      b.set,
    );
    await assert.rejects(
      validateRunConfig({
        ...raw,
        eval: {
          extraSets: [
            { name: 'b', set: b.set },
            { name: 'c', file: 'missing.jsonl' },
          ],
        },
      }),
      (e: unknown) =>
        e instanceof ApplicationFailure &&
        e.type === FailureType.InvalidTaskSet &&
        e.nonRetryable &&
        /^eval\.extraSets\.1\.file: /.test(e.message),
    );
  });

  void it('a task file changed under a running run does not change the run: it keeps using the pinned set', async () => {
    const trainFile = path.join(dir, 'train.jsonl');
    writeFileSync(trainFile, jsonl(tasks('orig', 4)));
    writeFileSync(path.join(dir, 'eval.jsonl'), jsonl(tasks('ev', 2)));
    const seen: { iteration: number; taskSet: string | null; tasks: { id: string; input: unknown }[] }[] = [];
    let reach!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((r) => (reach = r));
    const released = new Promise<void>((r) => (release = r));
    // Rollouts read their tasks the way the real launchRollouts does: by hash, on a "worker" that has no task files.
    const remote = new PinnedTaskSets(store, path.join(dir, 'no-such-dir'));
    const activities = {
      ...createConfigActivities({ taskSets: new PinnedTaskSets(store, dir) }),
      async servePolicy(): Promise<void> {},
      async launchRollouts(input: LaunchRolloutsInput) {
        if (input.iteration === 1) {
          reach();
          await released;
        }
        const { byId } = await remote.load(input.taskSet!);
        seen.push({
          iteration: input.iteration,
          taskSet: input.taskSet,
          tasks: input.tasks.map((t) => ({ id: t.taskId, input: byId.get(t.taskId)?.input })),
        });
        return {
          results: input.tasks.flatMap((t) =>
            t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
          ),
        };
      },
      async computeRewards(input: ComputeRewardsInput): Promise<RewardsSummary> {
        return {
          meanReward: 0,
          rewardSum: 0,
          scored: input.results.length,
          infraFailed: 0,
          unscored: [],
          rewardsKey: keys.rewards(input.config.runId, input.iteration),
        };
      },
      // No trainable samples: each iteration ends after its rollouts, which is all this test needs.
      async buildBatch() {
        return { samples: 0, tokens: 0, batchKey: 'unused', manifestKey: 'unused', dropReasons: 'zero_variance: 2' };
      },
    };
    const config = parseRunConfig({
      runId: 'pinned-run',
      iterations: 2,
      agent: { command: ['true'] },
      tasks: { trainFile, evalFile: path.join(dir, 'eval.jsonl') },
      rollouts: { groupSize: 2, tasksPerIteration: 4 },
      reward: { kind: 'numeric_match' },
      eval: { everyIterations: 0 },
    });
    const connection = await NativeConnection.connect({ address: services.temporalAddress });
    const common = { connection, namespace: services.namespace, activities };
    const workers = [
      await Worker.create({ ...common, taskQueue: CPU_QUEUE, workflowsPath: WORKFLOWS_PATH }),
      await Worker.create({ ...common, taskQueue: GPU_QUEUE }),
    ];
    const running = Promise.all(workers.map((w) => w.run()));
    const { client, close } = await connectClient(loadEnv({ ...services.env }, dir));
    try {
      const { handle } = await startTrainingRun(client, config);
      await reached;
      // Between iterations the file is rewritten: other ids, other inputs.
      writeFileSync(trainFile, jsonl(tasks('changed', 4)));
      release();
      const status: RunStatus = await handle.result();
      assert.equal(status.history.length, 2);
    } finally {
      release();
      for (const w of workers) w.shutdown();
      await running;
      await connection.close();
      await close();
    }
    const pinned = sha256Bytes(canonicalTaskLines(tasks('orig', 4)));
    assert.deepEqual(
      seen.map((s) => [s.iteration, s.taskSet]),
      [
        [0, pinned],
        [1, pinned],
      ],
    );
    const original = new Map(tasks('orig', 4).map((t) => [t.id, t.input]));
    for (const s of seen) {
      assert.equal(s.tasks.length, 4);
      for (const t of s.tasks)
        assert.deepEqual(t.input, original.get(t.id), `iteration ${s.iteration} ran ${t.id} from the pinned set`);
    }
  });

  void it('volt train pins the task files before it starts the run: a worker with no task files runs it; an unknown hash fails clearly', async () => {
    const store = createObjectStore(services.s3);
    await store.ensureBucket();
    const taskDir = mkdtempSync(path.join(os.tmpdir(), 'volt-cli-tasks-'));
    writeFileSync(path.join(taskDir, 'train.jsonl'), jsonl(tasks('cli', 3)));
    writeFileSync(path.join(taskDir, 'eval.jsonl'), jsonl(tasks('held', 2)));
    const runConfig = (runId: string, taskConfig: object) => {
      const file = path.join(dir, `${runId}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          runId,
          iterations: 1,
          agent: { command: ['true'] },
          tasks: taskConfig,
          rollouts: { groupSize: 2, tasksPerIteration: 3 },
          reward: { kind: 'numeric_match' },
          eval: { everyIterations: 0 },
        }),
      );
      return file;
    };
    const cli = async (args: string[]) => {
      const out: string[] = [];
      const code = await runCli(args, { out: (l) => out.push(l), err: (l) => out.push(l), env: { ...services.env } });
      return { code, out: out.join('\n') };
    };
    const trainSet = sha256Bytes(canonicalTaskLines(tasks('cli', 3)));

    const started = await cli([
      'train',
      runConfig('cli-pinned', {
        trainFile: path.join(taskDir, 'train.jsonl'),
        evalFile: path.join(taskDir, 'eval.jsonl'),
      }),
    ]);
    assert.equal(started.code, 0, started.out);
    assert.ok(await store.stat(keys.taskSet(trainSet)), 'pinned by the CLI, before any worker ran');
    // The files are gone before a worker polls: the run can only get its tasks from the object store, by hash.
    rmSync(taskDir, { recursive: true, force: true });

    const unknown = 'e'.repeat(64);
    const refused = await cli(['train', runConfig('cli-unknown', { trainSet: unknown, evalSet: trainSet })]);
    assert.equal(refused.code, 1);
    assert.match(refused.out, new RegExp(`tasks\\.trainSet: task set ${unknown} is not in the object store`));

    const seen: { taskSet: string | null; inputs: unknown[] }[] = [];
    const remote = new PinnedTaskSets(store, path.join(dir, 'no-such-dir'));
    const activities = {
      ...createConfigActivities({ taskSets: remote }),
      async servePolicy(): Promise<void> {},
      async launchRollouts(input: LaunchRolloutsInput) {
        const { byId } = await remote.load(input.taskSet!);
        seen.push({ taskSet: input.taskSet, inputs: input.tasks.map((t) => byId.get(t.taskId)?.input) });
        return {
          results: input.tasks.flatMap((t) =>
            t.rolloutIds.map((rolloutId) => ({ rolloutId, attempt: 0, outcome: 'succeeded' as const })),
          ),
        };
      },
      async computeRewards(input: ComputeRewardsInput): Promise<RewardsSummary> {
        return {
          meanReward: 0,
          rewardSum: 0,
          scored: input.results.length,
          infraFailed: 0,
          unscored: [],
          rewardsKey: keys.rewards(input.config.runId, input.iteration),
        };
      },
      async buildBatch() {
        return { samples: 0, tokens: 0, batchKey: 'unused', manifestKey: 'unused', dropReasons: 'zero_variance: 3' };
      },
    };
    const connection = await NativeConnection.connect({ address: services.temporalAddress });
    const common = { connection, namespace: services.namespace, activities };
    const workers = [
      await Worker.create({ ...common, taskQueue: CPU_QUEUE, workflowsPath: WORKFLOWS_PATH }),
      await Worker.create({ ...common, taskQueue: GPU_QUEUE }),
    ];
    const running = Promise.all(workers.map((w) => w.run()));
    const { client, close } = await connectClient(loadEnv({ ...services.env }, dir));
    try {
      const handle = client.workflow.getHandle('cli-pinned');
      const status: RunStatus = await handle.result();
      assert.equal(status.history.length, 1);
      const startedWith = (await handle.fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!.input!
        .payloads![0]!.data!;
      assert.equal(
        JSON.parse(Buffer.from(startedWith).toString('utf8')).tasks.trainSet,
        trainSet,
        'the workflow was started with the hash',
      );
      assert.deepEqual(
        seen.map((s) => s.taskSet),
        [trainSet],
      );
      assert.deepEqual(
        seen[0]!.inputs.map((i) => JSON.stringify(i)).sort(),
        tasks('cli', 3)
          .map((t) => JSON.stringify(t.input))
          .sort(),
      );
      await assert.rejects(
        client.workflow.getHandle('cli-unknown').describe(),
        /not found/i,
        'a refused start starts nothing',
      );

      // A raw start (temporal workflow start, the Web UI) naming an unknown hash fails in its first activity, non-retryably.
      const raw = parseRunConfig({
        runId: 'raw-unknown',
        agent: { command: ['true'] },
        tasks: { trainSet: unknown, evalSet: trainSet },
        reward: { kind: 'numeric_match' },
      });
      const rawRun = await startTrainingRun(client, raw);
      const failure = await rawRun.handle.result().then(
        () => null,
        (e: unknown) => e,
      );
      let cause: unknown = failure;
      while (cause && !(cause instanceof ApplicationFailure)) cause = (cause as { cause?: unknown }).cause;
      assert.ok(cause instanceof ApplicationFailure, `typed failure, got ${String(failure)}`);
      assert.equal(cause.type, FailureType.InvalidTaskSet);
      assert.equal(cause.nonRetryable, true);
      assert.match(cause.message, new RegExp(`tasks\\.trainSet: task set ${unknown}`));
    } finally {
      for (const w of workers) w.shutdown();
      await running;
      await connection.close();
      await close();
    }
  });
});
