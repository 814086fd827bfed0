import { lineageSchema, type Lineage, type LineageRun } from '../contracts/lineage.js';
import type { PolicyRef } from '../contracts/policy.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';

type LineageStore = Pick<ObjectStore, 'getJsonOrNull' | 'putJson'>;

/** The lineage's stored record, or an empty one (no current policy, no runs) for a lineage that has not run yet. */
export async function readLineage(store: Pick<ObjectStore, 'getJsonOrNull'>, name: string): Promise<Lineage> {
  return (await store.getJsonOrNull(keys.lineage(name), lineageSchema)) ?? { name, current: null, runs: [] };
}

/** Promotion (or rollback) moved the lineage's current policy; writing the same policy again is a no-op. */
export async function setLineageCurrent(
  store: LineageStore,
  name: string,
  current: { policy: PolicyRef; score: number; runId: string },
): Promise<Lineage> {
  const lineage = await readLineage(store, name);
  if (lineage.current?.policy.sha256 === current.policy.sha256 && lineage.current.runId === current.runId)
    return lineage;
  const next: Lineage = { ...lineage, current: { ...current, at: new Date().toISOString() } };
  await store.putJson(keys.lineage(name), next, lineageSchema);
  return next;
}

/** A run of the lineage ended: append it once (a retried activity finds its own entry). */
export async function recordLineageRun(store: LineageStore, name: string, run: LineageRun): Promise<Lineage> {
  const lineage = await readLineage(store, name);
  if (lineage.runs.some((r) => r.runId === run.runId)) return lineage;
  const next: Lineage = { ...lineage, runs: [...lineage.runs, run] };
  await store.putJson(keys.lineage(name), next, lineageSchema);
  return next;
}

/** Task files earlier runs of the lineage trained on (tasks of later files are "new"). */
export const consumedTaskFiles = (lineage: Lineage): Set<string> => new Set(lineage.runs.flatMap((r) => r.taskFiles));
