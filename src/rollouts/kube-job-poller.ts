import { setTimeout as sleep } from 'node:timers/promises';
import type { BatchV1Api, CoreV1Api, V1Job, V1Pod } from '@kubernetes/client-node';
import { JOB_NAME_LABEL, MANAGED_BY_SELECTOR } from './kube-job.js';

export interface JobSnapshot {
  /** null when the Job does not exist (deleted, or never created). */
  job: V1Job | null;
  pods: V1Pod[];
}

interface Waiter {
  resolve(s: JobSnapshot): void;
  reject(e: unknown): void;
}

/**
 * Watches every Job a runner started with one LIST of Volt's Jobs and one of their pods per interval, however
 * many attempts are running: the API server's load does not grow with the number of rollouts.
 */
export class JobPoller {
  private waiters = new Map<string, Waiter[]>();
  private running = false;

  constructor(
    private readonly batch: BatchV1Api,
    private readonly core: CoreV1Api,
    private readonly namespace: string,
    private readonly intervalMs: number,
  ) {}

  /** Job `name` and its pods as of the next poll; rejects with the API error if that poll failed, or on abort. */
  next(name: string, signal: AbortSignal): Promise<JobSnapshot> {
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const list = this.waiters.get(name);
        const i = list?.indexOf(waiter) ?? -1;
        if (list && i >= 0) list.splice(i, 1);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        resolve: (s) => (signal.removeEventListener('abort', onAbort), resolve(s)),
        reject: (e) => (signal.removeEventListener('abort', onAbort), reject(e)),
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(name, [...(this.waiters.get(name) ?? []), waiter]);
      if (!this.running) {
        this.running = true;
        void this.loop();
      }
    });
  }

  private async loop(): Promise<void> {
    while (this.waiters.size > 0) {
      await sleep(this.intervalMs);
      const due = this.waiters;
      this.waiters = new Map();
      try {
        const [jobs, pods] = await Promise.all([
          this.batch.listNamespacedJob({ namespace: this.namespace, labelSelector: MANAGED_BY_SELECTOR }),
          this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: MANAGED_BY_SELECTOR }),
        ]);
        const byName = new Map(jobs.items.map((j) => [j.metadata?.name, j]));
        const podsOf = new Map<string, V1Pod[]>();
        for (const p of pods.items) {
          const job = p.metadata?.labels?.[JOB_NAME_LABEL];
          if (job) podsOf.set(job, [...(podsOf.get(job) ?? []), p]);
        }
        for (const [name, list] of due)
          for (const w of list) w.resolve({ job: byName.get(name) ?? null, pods: podsOf.get(name) ?? [] });
      } catch (e) {
        for (const list of due.values()) for (const w of list) w.reject(e);
      }
    }
    this.running = false;
  }
}
