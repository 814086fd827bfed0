import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NativeConnection, Worker } from '@temporalio/worker';
import { runCli } from '../../src/cli/run-cli.js';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { loadEnv, type VoltEnv } from '../../src/config/env.js';
import { parseRunConfig } from '../../src/config/run.js';
import { gatherReport } from '../../src/report/gather.js';
import type { ReportData } from '../../src/report/report-data.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { WORKFLOWS_PATH } from '../../src/workers/workers.js';
import { CPU_QUEUE, GPU_QUEUE } from '../../src/workflows/proxies.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { scriptedPipeline } from './scripted-pipeline.js';

const root = path.resolve(import.meta.dirname, '../..');
const runConfig = (runId: string, iterations: number, continueAsNewEvery: number) =>
  parseRunConfig({
    runId,
    iterations,
    continueAsNewEvery,
    agent: { command: ['node', 'agent.js'] },
    tasks: { trainFile: 'examples/calculator/tasks/train.jsonl', evalFile: 'examples/calculator/tasks/eval.jsonl' },
    rollouts: { groupSize: 2, tasksPerIteration: 2 },
    reward: { kind: 'weighted_sum', parts: { correct: { kind: 'numeric_match', source: 'output_file' } } },
    batch: { minGroupSize: 2 },
    eval: { tasks: 4 },
  });

/** Holds a run's iteration-1 rollouts: `reached` resolves when they start, `release()` lets them finish. */
function holdIteration1() {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  const released = new Promise<void>((r) => (release = r));
  return { reached, released, reach, release };
}

// Real Temporal dev server, real S3, the real training workflows; only the agents, model and trainer are scripted.
describe(
  'run report from Temporal: running, completed, cancelled (no worker for closed runs)',
  { timeout: 300_000 },
  () => {
    let services: TestServices;
    let env: Readonly<VoltEnv>;
    let store: ObjectStore;
    const holds = new Map([
      ['rep-done', holdIteration1()],
      ['rep-cancel', holdIteration1()],
    ]);
    const seen: Record<string, ReportData> = {};

    before(async () => {
      services = await startTestServices({ temporal: true, s3: true });
      env = loadEnv({ ...services.env, VOLT_PYTHON: path.join(root, '.venv/bin/python') }, root);
      store = createObjectStore(env);
      await store.ensureBucket();
    });
    after(async () => {
      for (const h of holds.values()) h.release();
      await services?.stop();
    });

    it('reports a running run from its status query, with the start time of its first execution', async () => {
      const activities = scriptedPipeline(store, async (runId, iteration) => {
        const hold = holds.get(runId);
        if (!hold || iteration !== 1) return;
        hold.reach();
        await hold.released;
      });
      const connection = await NativeConnection.connect({ address: services.temporalAddress });
      const common = { connection, namespace: services.namespace, activities };
      const workers = [
        await Worker.create({ ...common, taskQueue: CPU_QUEUE, workflowsPath: WORKFLOWS_PATH }),
        await Worker.create({ ...common, taskQueue: GPU_QUEUE }),
      ];
      const running = Promise.all(workers.map((w) => w.run()));
      const { client, close } = await connectClient(env);
      try {
        // rep-done continues-as-new after every iteration; rep-cancel keeps one execution (children in its history).
        const done = (await startTrainingRun(client, runConfig('rep-done', 2, 1))).handle;
        const cancelled = (await startTrainingRun(client, runConfig('rep-cancel', 3, 5))).handle;
        await Promise.all([...holds.values()].map((h) => h.reached));

        const live = await gatherReport(client, store, 'rep-done');
        assert.equal(live.timing.state, 'RUNNING');
        assert.equal(live.timing.closedAt, null);
        assert.deepEqual(
          live.status.history.map((h) => h.iteration),
          [0],
        );
        const latest = await done.describe();
        assert.ok(
          Date.parse(live.timing.startedAt) < latest.startTime.getTime(),
          'wall time counts from the first execution, not the continued one',
        );
        assert.deepEqual(
          live.samples?.rollouts.map((r) => [r.label, r.rolloutId, r.reward]),
          [
            ['best', 'g0-r1', 1],
            ['worst', 'g0-r0', 0],
          ],
        );
        assert.equal(live.samples?.rollouts[0]?.turns[0]?.completion, 'answer of g0-r1');
        seen.live = live;
        seen.beforeCancel = await gatherReport(client, store, 'rep-cancel');

        await cancelled.cancel();
        await assert.rejects(cancelled.result());
        holds.get('rep-done')!.release();
        await done.result();
      } finally {
        for (const h of holds.values()) h.release();
        for (const w of workers) w.shutdown();
        await running;
        await connection.close();
        await close();
      }
    });

    it('reports a completed run from its result, with no worker polling', async () => {
      const { client, close } = await connectClient(env);
      try {
        const r = await gatherReport(client, store, 'rep-done');
        assert.equal(r.timing.state, 'COMPLETED');
        assert.equal(r.timing.startedAt, seen.live!.timing.startedAt);
        assert.ok(r.timing.closedAt && r.timing.closedAt > r.timing.startedAt);
        assert.deepEqual(r.config, {
          model: 'smollm2-135m-instruct',
          iterations: 2,
          groupSize: 2,
          tasksPerIteration: 2,
          rewardKind: 'weighted_sum(numeric_match)',
          sandbox: 'bubblewrap',
        });
        assert.deepEqual(
          r.status.history.map((h) => [h.iteration, h.evalScore, h.promoted]),
          [
            [0, 0.5, true],
            [1, 0.25, false],
          ],
        );
        assert.equal(r.baseScore, 0.25);
        assert.deepEqual([r.status.best?.policy.name, r.status.best?.score], ['rep-done-it0', 0.5]);
        assert.deepEqual([r.promoted?.policy.name, r.promoted?.iteration], ['rep-done-it0', 0]);
        assert.equal(r.samples?.iteration, 1);
      } finally {
        await close();
      }
    });

    it('rebuilds a cancelled run from its history: the same iterations the query showed', async () => {
      const { client, close } = await connectClient(env);
      try {
        const r = await gatherReport(client, store, 'rep-cancel');
        assert.equal(r.timing.state, 'CANCELLED');
        assert.equal(r.status.history.length, 1);
        assert.deepEqual(r.status.history, seen.beforeCancel!.status.history);
        assert.deepEqual(r.status.best, seen.beforeCancel!.status.best);
        assert.equal(r.config?.iterations, 3);
      } finally {
        await close();
      }
    });

    it('`volt report` writes both files and prints their paths; an unknown run is a clear error', async () => {
      const lines: string[] = [];
      const errs: string[] = [];
      const io = {
        out: (l: string) => lines.push(l),
        err: (l: string) => errs.push(l),
        env: { ...services.env, VOLT_PYTHON: path.join(root, '.venv/bin/python') },
      };
      assert.equal(await runCli(['report', 'rep-cancel'], io), 0, errs.join('\n'));
      const dir = path.join(services.dataDir, 'reports', 'rep-cancel');
      // the headline first, then the two paths
      assert.deepEqual(lines, [
        'held-out score, base → best: 0.250 → 0.500 (+25.0 points)',
        path.join(dir, 'index.html'),
        path.join(dir, 'curve.png'),
      ]);
      assert.match(await readFile(lines[1]!, 'utf8'), /CANCELLED/);
      assert.equal((await readFile(lines[2]!)).subarray(1, 4).toString(), 'PNG');

      assert.equal(await runCli(['report', 'no-such-run'], io), 1);
      assert.match(errs.join('\n'), /volt report: no run no-such-run in Temporal namespace default/);
    });
  },
);
