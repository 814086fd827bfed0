import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createSmokeWorker } from '../../workers/smoke-worker.js';
import { SMOKE_TASK_QUEUE, smokeWorkflow } from '../../workflows/smoke.js';
import type { Command } from '../command.js';

export const smokeCommand: Command = {
  name: 'smoke',
  summary: 'run the smoke workflow on the running stack (worker in this process) and print its result',
  help: 'Needs `volt up`. Starts a worker on task queue volt-smoke, runs smokeWorkflow (writes and reads back an object in S3,\nsets VoltRunId/VoltPhase search attributes), prints the result and the workflow id to look up in the Web UI.',
  options: { message: { type: 'string', default: 'hello from volt smoke' } },
  async run(ctx) {
    const env = ctx.env();
    // The CLI owns this process, so it may quiet the SDK's bundler and worker chatter.
    Runtime.install({ logger: new DefaultLogger('WARN') });
    const { worker, connection: workerConnection } = await createSmokeWorker(env);
    const connection = await Connection.connect({ address: env.VOLT_TEMPORAL_ADDRESS });
    try {
      const client = new Client({ connection, namespace: env.VOLT_TEMPORAL_NAMESPACE });
      const runId = `smoke-${randomUUID().slice(0, 8)}`;
      const workflowId = `volt-${runId}`;
      const result = await worker.runUntil(
        client.workflow.execute(smokeWorkflow, {
          taskQueue: SMOKE_TASK_QUEUE,
          workflowId,
          args: [{ runId, message: String(ctx.values.message) }],
        }),
      );
      ctx.out(
        `workflow ${workflowId} completed: wrote ${result.bytes} bytes to s3://${env.VOLT_S3_BUCKET}/${result.key}`,
      );
      ctx.out(`read back: ${JSON.stringify(result.record)}`);
      ctx.out(
        `see it in Temporal Web: http://127.0.0.1:${env.VOLT_TEMPORAL_UI_PORT}/namespaces/${env.VOLT_TEMPORAL_NAMESPACE}/workflows/${workflowId}`,
      );
      return 0;
    } finally {
      await connection.close();
      await workerConnection.close();
    }
  },
};
