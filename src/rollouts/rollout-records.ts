import { rolloutOutcomeRecordSchema, type RolloutOutcomeRecord } from '../contracts/rollout-outcome.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';
import { Semaphore } from './semaphore.js';

/** Outcome records read at once when a launch starts (an evaluation may name thousands of rollouts). */
const READ_CONCURRENCY = 16;

/** The slice of the object store that launching rollouts reads and writes (records, started markers). */
export type RolloutRecordStore = Pick<ObjectStore, 'getJsonOrNull' | 'putJson' | 'list'>;

/** One rollout of a launch: which task, which group, and the attempts an earlier record had when it is rerun. */
export interface RolloutJob {
  taskId: string;
  groupId: string;
  rolloutId: string;
  earlier?: RolloutOutcomeRecord['attempts'];
}

export interface PriorOutcomes {
  /** Rollouts whose stored outcome record stands (a retried launch reuses it, the agent does not run again). */
  reused: Map<string, RolloutOutcomeRecord>;
  /** Everything else, in input order; a rerun rollout carries its record's attempts so its history is kept. */
  pending: RolloutJob[];
}

/**
 * Split a launch into the rollouts already decided and those still to run. A rollout named in `rerun` with its
 * record still at that attempt runs again; a record already past it was written by an earlier try of this launch.
 */
export async function priorOutcomes(
  store: Pick<RolloutRecordStore, 'getJsonOrNull'>,
  runId: string,
  iteration: number,
  jobs: readonly RolloutJob[],
  rerun: readonly { rolloutId: string; attempt: number }[],
): Promise<PriorOutcomes> {
  const rerunAt = new Map(rerun.map((r) => [r.rolloutId, r.attempt]));
  const reads = new Semaphore(READ_CONCURRENCY);
  const records = await Promise.all(
    jobs.map(async (job) => {
      const release = await reads.acquire();
      try {
        return await store.getJsonOrNull(
          keys.rolloutOutcome(runId, iteration, job.rolloutId),
          rolloutOutcomeRecordSchema,
        );
      } finally {
        release();
      }
    }),
  );
  const result: PriorOutcomes = { reused: new Map(), pending: [] };
  for (const [i, job] of jobs.entries()) {
    const record = records[i];
    if (record && rerunAt.get(job.rolloutId) === record.final.ref.attempt)
      result.pending.push({ ...job, earlier: record.attempts });
    else if (record) result.reused.set(job.rolloutId, record);
    else result.pending.push(job);
  }
  return result;
}

/** The attempt number after every attempt this rollout ever started (a crash leaves a started marker behind). */
export async function nextAttempt(
  store: Pick<RolloutRecordStore, 'list'>,
  runId: string,
  iteration: number,
  rolloutId: string,
): Promise<number> {
  let next = 0;
  for await (const o of store.list(keys.rolloutAttempts(runId, iteration, rolloutId))) {
    const m = /attempt-(\d+)\//.exec(o.key);
    if (m) next = Math.max(next, Number(m[1]) + 1);
  }
  return next;
}
