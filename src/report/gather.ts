import type { Client } from '@temporalio/client';
import type { ObjectStore } from '../storage/object-store.js';
import type { ReportData } from './report-data.js';
import { readRunData } from './run-source.js';
import { readStoreData } from './store-data.js';

/** All the I/O of a report: Temporal for status, config and times; the object store for scores and rollouts. */
export async function gatherReport(
  client: Client,
  store: ObjectStore,
  runId: string,
  now = new Date(),
): Promise<ReportData> {
  const run = await readRunData(client, runId);
  const last = run.status.history.at(-1)?.iteration ?? null;
  const stored = await readStoreData(store, runId, last);
  return { runId, ...run, ...stored, generatedAt: now.toISOString() };
}
