import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { createSmokeWorker } from '../../src/workers/smoke-worker.js';
import { loadEnv } from '../../src/config/env.js';
import { s3Client } from '../../src/stack/s3.js';
import { FailureType } from '../../src/contracts/failures.js';
import { smokeWorkflow } from '../../src/workflows/smoke.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

void describe('smoke workflow on a real Temporal dev server and S3', () => {
  let services: TestServices;
  let connection: Connection;
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    connection = await Connection.connect({ address: services.temporalAddress });
  });
  after(async () => {
    await connection?.close();
    await services?.stop();
  });

  void it('runs write -> read activities, stores the object, and sets search attributes', async () => {
    const env = loadEnv(services.env);
    const taskQueue = `smoke-test-${process.pid}`;
    const { worker, connection: workerConnection } = await createSmokeWorker(env, taskQueue);
    const client = new Client({ connection, namespace: services.namespace });
    const workflowId = 'smoke-test-1';
    try {
      const result = await worker.runUntil(
        client.workflow.execute(smokeWorkflow, {
          taskQueue,
          workflowId,
          args: [{ runId: 'run-smoke', message: 'ping' }],
        }),
      );
      assert.equal(result.key, 'runs/run-smoke/smoke.json');
      assert.deepEqual(
        { runId: result.record.runId, message: result.record.message },
        { runId: 'run-smoke', message: 'ping' },
      );

      const stat = await s3Client(services.s3).statObject(services.s3.bucket, result.key);
      assert.equal(stat.size, result.bytes);

      const described = await client.workflow.getHandle(workflowId).describe();
      assert.equal(described.status.name, 'COMPLETED');
      assert.deepEqual(described.searchAttributes.VoltRunId, ['run-smoke']);
      assert.deepEqual(described.searchAttributes.VoltPhase, ['done']);
    } finally {
      await workerConnection.close();
    }
  });

  void it('fails the workflow when the run id is unsafe (key layout refuses it, no object written)', async () => {
    const env = loadEnv(services.env);
    const taskQueue = `smoke-test-bad-${process.pid}`;
    const { worker, connection: workerConnection } = await createSmokeWorker(env, taskQueue);
    const client = new Client({ connection, namespace: services.namespace });
    try {
      const run = client.workflow.execute(smokeWorkflow, {
        taskQueue,
        workflowId: 'smoke-test-bad',
        args: [{ runId: '../escape', message: 'x' }],
      });
      await assert.rejects(worker.runUntil(run), (err: Error) => {
        const cause = (err.cause as { cause?: { type?: string; message?: string } } | undefined)?.cause;
        assert.equal(cause?.type, FailureType.InvalidConfig);
        assert.match(cause?.message ?? '', /unsafe run id/);
        return true;
      });
      const history = await client.workflow.getHandle('smoke-test-bad').fetchHistory();
      const attempts = history.events
        ?.filter((e) => e.activityTaskStartedEventAttributes)
        .map((e) => e.activityTaskStartedEventAttributes?.attempt);
      assert.deepEqual(attempts, [1], 'non-retryable: exactly one attempt');
      const objects = await s3Client(services.s3).listObjectsV2(services.s3.bucket, '', true).toArray();
      assert.deepEqual(
        objects.map((o: { name?: string }) => o.name),
        ['runs/run-smoke/smoke.json'],
        'only the first test wrote',
      );
    } finally {
      await workerConnection.close();
    }
  });
});
