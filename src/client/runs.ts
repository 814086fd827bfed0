import { readFile } from 'node:fs/promises';
import type { Client, ScheduleHandle, WorkflowHandle } from '@temporalio/client';
import {
  ScheduleOverlapPolicy,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import type { VoltEnv } from '../config/env.js';
import { parseRunConfig, type RunConfig } from '../config/run.js';
import { createObjectStore } from '../storage/object-store.js';
import { PinnedTaskSets, pinRunConfig } from '../tasks/pinned-task-sets.js';
import {
  DASHBOARD_MEMO,
  pauseSignal,
  resumeSignal,
  rollbackUpdate,
  setHyperParametersUpdate,
  statusQuery,
  type HyperParameterPatch,
  type RollbackRequest,
  type RollbackResult,
} from '../workflows/definitions.js';
import { CPU_QUEUE } from '../workflows/proxies.js';
import { runDetails } from '../workflows/run-details.js';
import type { RunStatus } from '../workflows/types.js';

/** Read and validate a run config file at the edge (with top-level `overrides` applied first): errors name the file and every bad field's path. */
export async function readRunConfig(file: string, overrides: Record<string, unknown> = {}): Promise<RunConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
  return parseRunConfig(raw && typeof raw === 'object' ? { ...raw, ...overrides } : raw);
}

/**
 * Pin the run's task files in the object store by content (task files resolve from `baseDir`, the CLI's working
 * directory) and return the config naming them by hash, so the workers that run it need no task files; a hash the
 * config already gives must be in the store. A bad file or unknown hash is a TaskSetError naming the field.
 */
export async function pinTaskSets(
  env: Readonly<VoltEnv>,
  config: RunConfig,
  baseDir = process.cwd(),
): Promise<RunConfig> {
  const taskSets = new PinnedTaskSets(createObjectStore(env), baseDir);
  return pinRunConfig(taskSets, config);
}

/** Where a run's pages are, for its Temporal Web details (the CLI passes its VOLT_DASHBOARD_URL). */
export interface RunLinks {
  dashboardUrl?: string;
}

/**
 * Start a run's workflow, or find it: the workflow id is the run id, so starting a run that exists (running or
 * ended) returns its handle — this is how an interrupted `volt train` / `make demo` resumes the same run.
 */
export async function startOrAttach(
  client: Client,
  workflowType: string,
  config: RunConfig,
  staticSummary: string,
  links: RunLinks = {},
): Promise<{ handle: WorkflowHandle; started: boolean }> {
  try {
    const handle = await client.workflow.start(workflowType, {
      taskQueue: CPU_QUEUE,
      workflowId: config.runId,
      // A run id names one run's storage for good: starting it again attaches to that run, even when it has ended.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      args: [config],
      staticSummary,
      // The run links its page in its current details too, from the memo (src/workflows/run-details.ts).
      ...(links.dashboardUrl
        ? {
            staticDetails: runDetails(links.dashboardUrl, config.runId),
            memo: { [DASHBOARD_MEMO]: links.dashboardUrl },
          }
        : {}),
    });
    return { handle, started: true };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return { handle: client.workflow.getHandle(config.runId), started: false };
    throw err;
  }
}

export function startTrainingRun(
  client: Client,
  config: RunConfig,
  links: RunLinks = {},
): Promise<{ handle: WorkflowHandle; started: boolean }> {
  const unsandboxed =
    config.rollouts.runner === 'local' && config.rollouts.sandbox === 'none' ? ', rollouts UNSANDBOXED' : '';
  return startOrAttach(
    client,
    'trainingRun',
    config,
    `training run ${config.runId}: ${config.iterations} iterations of ${config.model.base}${unsandboxed}`,
    links,
  );
}

export const runHandle = (client: Client, runId: string) => client.workflow.getHandle(runId);
export const queryStatus = (client: Client, runId: string): Promise<RunStatus> =>
  runHandle(client, runId).query(statusQuery);
export const pauseRun = (client: Client, runId: string) => runHandle(client, runId).signal(pauseSignal);
export const resumeRun = (client: Client, runId: string) => runHandle(client, runId).signal(resumeSignal);
/** Send the update; a rejection says why (the validator's message names every bad field), not just "Update failed". */
export const setHyperParameters = (client: Client, runId: string, patch: HyperParameterPatch) =>
  runHandle(client, runId)
    .executeUpdate(setHyperParametersUpdate, { args: [patch] })
    .catch((err: unknown) => {
      if (err instanceof WorkflowUpdateFailedError && err.cause)
        throw new Error(`setHyperParameters rejected: ${err.cause.message}`, { cause: err });
      throw err;
    });
/** Move a run's best back (update `rollback`); a target the run never promoted is rejected with the run's reason. */
export async function rollbackRun(client: Client, runId: string, request: RollbackRequest): Promise<RollbackResult> {
  try {
    return await runHandle(client, runId).executeUpdate(rollbackUpdate, { args: [request] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause)
      throw new Error(`rollback ${runId}: ${err.cause.message}`, { cause: err });
    throw err;
  }
}

/**
 * A Temporal Schedule that starts the run on a cron; each start gets its own run id (schedule id + time). Overlap is
 * SKIP (a night still running makes the next start a no-op, so one lineage never trains twice at once); after downtime
 * missed starts within `catchupWindow` are taken (with SKIP: at most one).
 */
export async function createSchedule(
  client: Client,
  scheduleId: string,
  cron: string,
  config: RunConfig,
  options: { catchupWindowMs?: number } & RunLinks = {},
): Promise<ScheduleHandle> {
  return client.schedule.create({
    scheduleId,
    spec: { cronExpressions: [cron] },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: options.catchupWindowMs ?? 86_400_000 },
    action: {
      type: 'startWorkflow',
      workflowType: 'trainingRun',
      taskQueue: CPU_QUEUE,
      workflowId: config.lineage ?? scheduleId,
      args: [config],
      staticSummary: config.lineage ? `nightly run of lineage ${config.lineage}` : `scheduled run of ${scheduleId}`,
      // Each start gets its own run id, unknown here: the link goes to the runs page, which lists it.
      ...(options.dashboardUrl
        ? { staticDetails: runDetails(options.dashboardUrl), memo: { [DASHBOARD_MEMO]: options.dashboardUrl } }
        : {}),
    },
  });
}

/** Start the schedule's action now under its own overlap policy (the SDK's default for trigger is ALLOW_ALL). */
export const triggerSchedule = (client: Client, scheduleId: string) =>
  client.schedule.getHandle(scheduleId).trigger(ScheduleOverlapPolicy.SKIP);
