import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Worker, DefaultLogger, Runtime, NativeConnection } from '@temporalio/worker';
import { createConfigActivities } from '../../src/activities/config.js';
import { connectClient } from '../../src/client/connect.js';
import { queryStatus, setHyperParameters, startTrainingRun } from '../../src/client/runs.js';
import { parseRunConfig } from '../../src/config/run.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { WORKFLOWS_PATH } from '../../src/workers/workers.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

// A real run on a real Temporal dev server; no worker polls volt-gpu, so the run waits at its first iteration's
// servePolicy while `volt tune` sends updates to it.
describe('setHyperParameters / volt tune', { timeout: 300_000 }, () => {
  let services: TestServices;
  let worker: Worker;
  let running: Promise<void>;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-tune-'));
  const runId = 'tune-run';

  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    const store = createObjectStore({ ...services.s3, bucket: 'volt-tune' });
    await store.ensureBucket();
    writeFileSync(path.join(dir, 'tasks.jsonl'), `${JSON.stringify({ id: 't0', input: { q: 'x' } })}\n`);
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    const connection = await NativeConnection.connect({ address: services.temporalAddress });
    worker = await Worker.create({
      connection,
      taskQueue: CPU_QUEUE,
      workflowsPath: WORKFLOWS_PATH,
      activities: createConfigActivities({ taskSets: new PinnedTaskSets(store, dir) }),
    });
    running = worker.run().finally(() => connection.close());
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await services?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rejects at the update what the next iteration would fail on, and applies valid values', async () => {
    const config = parseRunConfig({
      runId,
      agent: { command: ['true'] },
      tasks: { trainFile: 'tasks.jsonl', evalFile: 'tasks.jsonl' },
      reward: { kind: 'numeric_match' },
      rollouts: { groupSize: 4 },
      batch: { minGroupSize: 3 },
      eval: { everyIterations: 0 },
    });
    const { client, close } = await connectClient({
      VOLT_TEMPORAL_ADDRESS: services.temporalAddress,
      VOLT_TEMPORAL_NAMESPACE: 'default',
    });
    try {
      await startTrainingRun(client, config);
      for (let i = 0; (await queryStatus(client, runId)).phase !== 'rollouts'; i++) {
        if (i > 600) throw new Error('the run never got past validation');
        await sleep(100);
      }
      const volt = (...args: string[]) =>
        run(process.execPath, [path.join(root, 'bin/volt.mjs'), ...args], {
          cwd: root,
          env: { ...process.env, ...services.env },
        }).then(
          (r) => ({ code: 0, out: r.stdout + r.stderr }),
          (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
        );
      // The trainer requires 0 < clip_low < 1: clipLow=0 would pass the update and kill the run at the next update.
      const clip = await volt('tune', runId, '--set', 'clipLow=0');
      assert.notEqual(clip.code, 0, clip.out);
      assert.match(clip.out, /clipLow \(trainer\.clipLow\): expected a finite number > 0 and < 1, got 0/);
      // Below batch.minGroupSize every group would be dropped silently.
      await assert.rejects(
        setHyperParameters(client, runId, { groupSize: 2 }),
        /batch\.minGroupSize: must be <= rollouts\.groupSize \(2\)/,
      );
      // A negative margin is a non-inferiority margin, allowed down to -1.
      await assert.rejects(
        setHyperParameters(client, runId, { promoteMargin: -1.5 }),
        /promoteMargin \(eval\.promoteMargin\): expected a finite number >= -1 and <= 1, got -1\.5/,
      );
      const ok = await volt('tune', runId, '--set', 'clipLow=0.1', '--set', 'groupSize=3');
      assert.equal(ok.code, 0, ok.out);
      assert.match(ok.out, /applied from the next iteration: \{"clipLow":0.1,"groupSize":3\}/);
    } finally {
      await client.workflow
        .getHandle(runId)
        .terminate('test done')
        .catch(() => undefined);
      await close();
    }
  });
});
