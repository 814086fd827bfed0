import path from 'node:path';
import { connectClient } from '../client/connect.js';
import type { VoltEnv } from '../config/env.js';
import { assertId } from '../storage/keys.js';
import { createObjectStore } from '../storage/object-store.js';
import { gatherReport } from './gather.js';
import { writeReport, type WrittenReport } from './write-report.js';

/** Where `volt report` writes unless told otherwise: <dataDir>/reports/<runId>/. */
export const defaultReportDir = (env: Pick<VoltEnv, 'dataDir'>, runId: string) => path.join(env.dataDir, 'reports', assertId('run', runId));

/** Gather a run's report from Temporal and the object store and write it to `outDir`. */
export async function buildRunReport(env: Readonly<VoltEnv>, runId: string, outDir = defaultReportDir(env, runId)): Promise<WrittenReport> {
  assertId('run', runId);
  const { client, close } = await connectClient(env).catch((err: unknown) => {
    throw new Error(`Temporal at ${env.VOLT_TEMPORAL_ADDRESS}: ${(err as Error).message} (is it up? \`volt up\`)`, { cause: err });
  });
  try {
    const data = await gatherReport(client, createObjectStore(env), runId);
    return await writeReport(data, outDir, path.resolve(env.VOLT_PYTHON));
  } finally {
    await close();
  }
}
