import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { WORKFLOWS_PATH } from '../../src/workers/workers.js';

export const HISTORIES_DIR = path.resolve(import.meta.dirname, 'histories');

export interface RecordedHistory {
  /** The real workflow id: workflows derive ids (run id, child ids) from it, so replay must use the same. */
  workflowId: string;
  runId: string;
  history: unknown;
}

/** Fetch the histories of every closed Volt workflow of these types on the server; with `save`, write them as replay fixtures. */
export async function recordHistories(
  client: Client,
  save: boolean,
  types = ['trainingRun', 'trainingIteration', 'evaluation'],
): Promise<RecordedHistory[]> {
  const out: RecordedHistory[] = [];
  const query = `WorkflowType IN (${types.map((t) => `'${t}'`).join(', ')}) AND ExecutionStatus != 'Running'`;
  for await (const w of client.workflow.list({ query })) {
    const history = await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    out.push({ workflowId: w.workflowId, runId: w.runId, history });
  }
  if (save) {
    mkdirSync(HISTORIES_DIR, { recursive: true });
    // The Temporal CLI's JSON form (`temporal workflow show --output json`), so files are readable and portable.
    for (const h of out)
      writeFileSync(path.join(HISTORIES_DIR, `${h.workflowId}--${h.runId}.json`), historyToJSON(h.history as History));
  }
  return out;
}

export function loadRecordedHistories(): RecordedHistory[] {
  let files: string[] = [];
  try {
    files = readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  return files.map((f) => {
    const [workflowId = '', runId = ''] = f.replace(/\.json$/, '').split('--');
    return {
      workflowId,
      runId,
      history: historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES_DIR, f), 'utf8'))),
    };
  });
}

/** Replay with the current workflow code; any non-determinism fails with the workflow id that broke. */
export async function replayAll(histories: RecordedHistory[]): Promise<void> {
  const results = Worker.runReplayHistories(
    { workflowsPath: WORKFLOWS_PATH },
    histories.map((h) => ({ workflowId: h.workflowId, history: h.history as never })),
  );
  const failures: string[] = [];
  for await (const r of results) if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  // Several executions share a workflow id (continue-as-new); the SDK reports them by id, which is enough to find them.
  if (failures.length) throw new Error(`replay failed:\n${failures.join('\n')}`);
}
