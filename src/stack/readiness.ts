import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { logTail } from './processes.js';

/** Poll probe until it answers true; fail early with the log tail if the child exits first. */
export async function waitUntilReady(
  what: string,
  probe: () => Promise<boolean>,
  opts: { child?: ChildProcess; logFile?: string; timeoutMs?: number },
): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let exited: string | null = null;
  const onExit = (code: number | null, sig: NodeJS.Signals | null) => (exited = `exited with ${sig ?? `code ${code}`}`);
  opts.child?.once('exit', onExit);
  try {
    while (Date.now() < deadline) {
      if (exited) break;
      if (await probe().catch(() => false)) return;
      await sleep(150);
    }
    const why = exited ?? `did not answer within ${opts.timeoutMs ?? 60_000} ms`;
    throw new Error(
      `${what} ${why}${opts.logFile ? `; last log lines (${opts.logFile}):\n${logTail(opts.logFile)}` : ''}`,
    );
  } finally {
    opts.child?.off('exit', onExit);
  }
}

/** Temporal answers when its frontend passes a gRPC health check and the namespace is served. */
export async function temporalAnswers(address: string, namespace: string): Promise<boolean> {
  // Generous: on a loaded machine a one-shot probe (`volt status`) must not report a healthy server as down.
  const connection = await Connection.connect({ address, connectTimeout: 5_000 });
  try {
    const health = await connection.healthService.check({ service: 'temporal.api.workflowservice.v1.WorkflowService' });
    if (health.status !== 1) return false; // 1 = SERVING
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } finally {
    await connection.close();
  }
}

/** Any HTTP answer below 500 from url within the timeout. */
export async function httpAnswers(url: string, timeoutMs = 1_000): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  await res.body?.cancel();
  return res.status < 500;
}
