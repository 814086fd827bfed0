import os from 'node:os';
import { Connection } from '@temporalio/client';
import { CPU_QUEUE, GPU_QUEUE } from '../workflows/proxies.js';

/** What each queue of `volt worker --queue all` polls for: workflows on volt-cpu, activities on both. */
const POLLED = [
  { queue: CPU_QUEUE, type: 1 }, // TASK_QUEUE_TYPE_WORKFLOW
  { queue: GPU_QUEUE, type: 2 }, // TASK_QUEUE_TYPE_ACTIVITY
];

/** A poller that has not polled within this window is a worker that went away (Temporal keeps it listed for minutes). */
const FRESH_MS = 120_000;

/** The SDK's default worker identity, which `volt up` leaves in place so a poller can be tied to its PID. */
export const workerIdentity = (pid: number) => `${pid}@${os.hostname()}`;

/**
 * True when volt-cpu and volt-gpu both have a recent poller: the one with `identity` when given, else any.
 * Temporal's own view of the worker, so it also proves the worker reached the server.
 */
export async function workerPolls(address: string, namespace: string, identity?: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 5_000 });
  try {
    for (const { queue, type } of POLLED) {
      const res = await connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: queue },
        taskQueueType: type,
      });
      const fresh = (res.pollers ?? []).filter((p) => {
        const seconds = Number(p.lastAccessTime?.seconds ?? 0);
        return Date.now() - seconds * 1000 < FRESH_MS && (identity === undefined || p.identity === identity);
      });
      if (fresh.length === 0) return false;
    }
    return true;
  } finally {
    await connection.close();
  }
}
