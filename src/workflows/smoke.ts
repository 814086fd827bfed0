import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { SmokeActivities, SmokeRecord } from '../activities/smoke.js';
import { PhaseKey, RunIdKey } from './definitions.js';

export const SMOKE_TASK_QUEUE = 'volt-smoke';

const { writeSmokeObject, readSmokeObject } = proxyActivities<SmokeActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3 },
});

export interface SmokeResult {
  key: string;
  bytes: number;
  record: SmokeRecord;
}

/** Proves Temporal, a worker, the object store and Volt's search attributes work together. */
export async function smokeWorkflow(input: { runId: string; message: string }): Promise<SmokeResult> {
  upsertSearchAttributes([
    { key: RunIdKey, value: input.runId },
    { key: PhaseKey, value: 'smoke' },
  ]);
  const { key, bytes } = await writeSmokeObject(input);
  const record = await readSmokeObject(key);
  upsertSearchAttributes([{ key: PhaseKey, value: 'done' }]);
  return { key, bytes, record };
}
