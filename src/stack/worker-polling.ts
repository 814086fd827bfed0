import os from 'node:os';
import { Connection, type Client } from '@temporalio/client';
import { CPU_QUEUE, GPU_QUEUE } from '../workflows/proxies.js';

/** What each queue of `volt worker --queue all` polls for: workflows on volt-cpu, activities on both. */
const CPU_WORKFLOWS = { queue: CPU_QUEUE, type: 1 }; // TASK_QUEUE_TYPE_WORKFLOW
const POLLED = [CPU_WORKFLOWS, { queue: GPU_QUEUE, type: 2 }]; // TASK_QUEUE_TYPE_ACTIVITY

/** A poller that has not polled within this window is a worker that went away (Temporal keeps it listed for minutes). */
const FRESH_MS = 120_000;

/** The SDK's default worker identity, which `volt up` leaves in place so a poller can be tied to its PID. */
export const workerIdentity = (pid: number) => `${pid}@${os.hostname()}`;

type WorkflowService = Client['workflowService'];

/** Whether a queue has a poller of that type within FRESH_MS, the one with `identity` when given. */
async function polled(
  service: WorkflowService,
  namespace: string,
  { queue, type }: typeof CPU_WORKFLOWS,
  identity?: string,
): Promise<boolean> {
  const res = await service.describeTaskQueue({ namespace, taskQueue: { name: queue }, taskQueueType: type });
  return (res.pollers ?? []).some((p) => {
    const seconds = Number(p.lastAccessTime?.seconds ?? 0);
    return Date.now() - seconds * 1000 < FRESH_MS && (identity === undefined || p.identity === identity);
  });
}

/** Whether any worker polls volt-cpu for workflow tasks in the namespace: without one a started run never moves. */
export const runsGetPicked = (service: WorkflowService, namespace: string) => polled(service, namespace, CPU_WORKFLOWS);

/**
 * True when volt-cpu and volt-gpu both have a recent poller: the one with `identity` when given, else any.
 * Temporal's own view of the worker, so it also proves the worker reached the server.
 */
export async function workerPolls(address: string, namespace: string, identity?: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 5_000 });
  try {
    for (const queue of POLLED)
      if (!(await polled(connection.workflowService, namespace, queue, identity))) return false;
    return true;
  } finally {
    await connection.close();
  }
}
