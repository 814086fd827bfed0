import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { loadEnv } from '../../src/config/env.js';
import { runsGetPicked } from '../../src/stack/worker-polling.js';
import { createSmokeWorker } from '../../src/workers/smoke-worker.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { voltInProcess } from './volt-cli.js';

/**
 * `volt train` started in a namespace where no worker polls volt-cpu (a laptop left on `default` while the cluster's
 * workers use another) says so at once instead of leaving `--follow` to wait for ever; with a worker polling, it
 * says nothing. Real Temporal dev server and S3 (the task files are pinned there first).
 */
void describe('volt train in a namespace without workers', () => {
  let services: TestServices;
  let env: Record<string, string>;
  let connection: Connection;
  const config = (runId: string) => path.join(services.dataDir, `${runId}.json`);
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    env = { ...services.env, VOLT_DATA_DIR: services.dataDir };
    connection = await Connection.connect({ address: services.temporalAddress });
    const tasks = path.join(services.dataDir, 'tasks.jsonl');
    await writeFile(tasks, `${JSON.stringify({ id: 't1', input: { q: '1+1' }, reference: { answer: 2 } })}\n`);
    for (const runId of ['nobody-polls', 'a-worker-polls'])
      await writeFile(
        config(runId),
        JSON.stringify({
          runId,
          agent: { command: ['node', 'agent.mjs'] },
          tasks: { trainFile: tasks, evalFile: tasks },
          reward: { kind: 'numeric_match', source: 'output_file' },
        }),
      );
  });
  after(async () => {
    await connection?.close();
    await services?.stop();
  });

  void it('warns naming the queue, the namespace and VOLT_TEMPORAL_NAMESPACE when no worker polls', async () => {
    const r = await voltInProcess(['train', config('nobody-polls')], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /started run nobody-polls/);
    assert.match(
      r.stderr,
      new RegExp(
        `warning: no worker has polled task queue ${CPU_QUEUE} in namespace ${services.namespace} on ${services.temporalAddress}.*VOLT_TEMPORAL_NAMESPACE`,
      ),
    );
  });

  void it('says nothing when a worker polls the queue in that namespace', async () => {
    const { worker, connection: workerConnection } = await createSmokeWorker(loadEnv(env), CPU_QUEUE);
    const running = worker.run();
    try {
      for (let i = 0; i < 100 && !(await runsGetPicked(connection.workflowService, services.namespace)); i++)
        await sleep(200);
      const r = await voltInProcess(['train', config('a-worker-polls')], env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /started run a-worker-polls/);
      assert.doesNotMatch(r.stderr, /warning/);
    } finally {
      worker.shutdown();
      await running;
      await workerConnection.close();
    }
  });
});
