import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { failureMappingInterceptors } from '../activities/failure-mapping.js';
import { createCpuActivities, createGpuActivities } from '../activities/index.js';
import type { VoltEnv } from '../config/env.js';
import { CPU_QUEUE, GPU_QUEUE } from '../workflows/proxies.js';
import { buildActivityDeps } from './deps.js';

export const WORKFLOWS_PATH = path.resolve(import.meta.dirname, '../workflows/index.ts');
export type Queue = 'cpu' | 'gpu';

/**
 * Workers for the given queues in one process: `cpu` runs the workflows and the cpu activities, `gpu` the policy
 * update and serving control. The embedded setup runs both; at scale each queue has its own pool.
 */
export async function createWorkers(
  env: Readonly<VoltEnv>,
  queues: readonly Queue[],
  options: { identity?: string } = {},
) {
  const connection = await NativeConnection.connect({ address: env.VOLT_TEMPORAL_ADDRESS });
  const deps = await buildActivityDeps(env);
  // A restarted worker kills the agents its dead predecessor left running and closes their gateway tokens.
  deps.runner
    .reapAbandoned?.((token) => deps.gateway.close(token))
    .catch((err: unknown) => console.error(`reaping abandoned agents failed: ${String(err)}`));
  const common = {
    connection,
    namespace: env.VOLT_TEMPORAL_NAMESPACE,
    interceptors: { activity: failureMappingInterceptors },
    ...(options.identity && { identity: options.identity }),
  };
  const workers: Worker[] = [];
  try {
    if (queues.includes('cpu')) {
      workers.push(
        await Worker.create({
          ...common,
          taskQueue: CPU_QUEUE,
          workflowsPath: WORKFLOWS_PATH,
          activities: createCpuActivities(deps),
          maxConcurrentActivityTaskExecutions: 16,
        }),
      );
    }
    if (queues.includes('gpu')) {
      // One update at a time per GPU worker: the trainer owns the device.
      workers.push(
        await Worker.create({
          ...common,
          taskQueue: GPU_QUEUE,
          activities: createGpuActivities(deps),
          maxConcurrentActivityTaskExecutions: 2,
        }),
      );
    }
  } catch (err) {
    await connection.close();
    throw err;
  }
  return {
    workers,
    /** Run until every worker shuts down (on SIGINT/SIGTERM, or `shutdown()`). */
    async run(): Promise<void> {
      try {
        await Promise.all(workers.map((w) => w.run()));
      } finally {
        await connection.close();
      }
    },
    shutdown(): void {
      for (const w of workers) w.shutdown();
    },
  };
}
