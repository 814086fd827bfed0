import path from 'node:path';
import { connectClient } from '../client/connect.js';
import type { VoltEnv } from '../config/env.js';
import { assertId } from '../storage/keys.js';
import { createObjectStore } from '../storage/object-store.js';
import { gatherApoReport, isPromptOptimization, writeApoReport } from './apo-report.js';
import { gatherReport } from './gather.js';
import { writeReport, type WrittenReport } from './write-report.js';

/** Where `volt report` writes unless told otherwise: <dataDir>/reports/<runId>/. */
export const defaultReportDir = (env: Pick<VoltEnv, 'dataDir'>, runId: string) =>
  path.join(env.dataDir, 'reports', assertId('run', runId));

/** Gather a run's report from Temporal and the object store and write it to `outDir`. */
export async function buildRunReport(
  env: Readonly<VoltEnv>,
  runId: string,
  outDir = defaultReportDir(env, runId),
): Promise<WrittenReport> {
  assertId('run', runId);
  const { client, close } = await connectClient(env).catch((err: unknown) => {
    throw new Error(`Temporal at ${env.VOLT_TEMPORAL_ADDRESS}: ${(err as Error).message} (is it up? \`volt up\`)`, {
      cause: err,
    });
  });
  try {
    const store = createObjectStore(env);
    const python = path.resolve(env.VOLT_PYTHON);
    // A prompt-optimisation run has its own status shape and page.
    if (await isPromptOptimization(client, runId))
      return await writeApoReport(await gatherApoReport(client, store, runId), outDir, python);
    return await writeReport(await gatherReport(client, store, runId), outDir, python);
  } finally {
    await close();
  }
}
