import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { statusQuery } from '../workflows/definitions.js';
import type { RunStatus } from '../workflows/types.js';
import type { ReportData } from './report-data.js';
import { startInput, statusFromHistory, summarizeConfig } from './run-history.js';

/**
 * What Temporal knows about a run: its status (the `status` query while running — needs a worker; the result once
 * completed; rebuilt from history when it failed or was cancelled), its config and its wall-clock extent.
 */
export async function readRunData(
  client: Client,
  runId: string,
): Promise<Pick<ReportData, 'status' | 'timing' | 'config'>> {
  const handle = client.workflow.getHandle(runId);
  const desc = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError)
      throw new Error(`no run ${runId} in Temporal namespace ${client.options.namespace}`, { cause: err });
    throw err;
  });
  // Volt uses no payload codec, so the payload converter alone decodes inputs and results.
  const converter = client.workflow.options.loadedDataConverter.payloadConverter;
  const history = await client.workflow.getHandle(runId, desc.runId).fetchHistory();
  const { config, firstExecutionRunId } = startInput(history, converter);
  const state = desc.status.name;
  let status: RunStatus;
  if (state === 'RUNNING') {
    status = await handle.query(statusQuery).catch((err: unknown) => {
      throw new Error(
        `run ${runId} is running; its status query failed (is a worker polling ${desc.taskQueue}? \`volt worker\`): ${(err as Error).message}`,
        { cause: err },
      );
    });
  } else if (state === 'COMPLETED') status = (await handle.result()) as RunStatus;
  else status = statusFromHistory(runId, history, converter);
  // After continue-as-new the latest execution started late; the run started with the first one.
  const first =
    firstExecutionRunId && firstExecutionRunId !== desc.runId
      ? await client.workflow.getHandle(runId, firstExecutionRunId).describe()
      : desc;
  return {
    status,
    config: config ? summarizeConfig(config) : null,
    timing: { state, startedAt: first.startTime.toISOString(), closedAt: desc.closeTime?.toISOString() ?? null },
  };
}
