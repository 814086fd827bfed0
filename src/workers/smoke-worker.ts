import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { VoltEnv } from '../config/env.js';
import { createSmokeActivities } from '../activities/smoke.js';
import { s3Client } from '../stack/s3.js';
import { SMOKE_TASK_QUEUE } from '../workflows/smoke.js';

export const SMOKE_WORKFLOWS_PATH = path.resolve(import.meta.dirname, '../workflows/smoke.ts');

type SmokeEnv = Pick<
  VoltEnv,
  | 'VOLT_TEMPORAL_ADDRESS'
  | 'VOLT_TEMPORAL_NAMESPACE'
  | 'VOLT_S3_ENDPOINT'
  | 'VOLT_S3_ACCESS_KEY'
  | 'VOLT_S3_SECRET_KEY'
  | 'VOLT_S3_BUCKET'
  | 'VOLT_S3_REGION'
>;

/** A worker for the smoke workflow on its own task queue; the caller runs it and closes the connection. */
export async function createSmokeWorker(
  env: SmokeEnv,
  taskQueue = SMOKE_TASK_QUEUE,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: env.VOLT_TEMPORAL_ADDRESS });
  try {
    const s3 = s3Client({
      endpoint: env.VOLT_S3_ENDPOINT,
      accessKey: env.VOLT_S3_ACCESS_KEY,
      secretKey: env.VOLT_S3_SECRET_KEY,
      region: env.VOLT_S3_REGION,
    });
    const worker = await Worker.create({
      connection,
      namespace: env.VOLT_TEMPORAL_NAMESPACE,
      taskQueue,
      workflowsPath: SMOKE_WORKFLOWS_PATH,
      activities: createSmokeActivities({ s3, bucket: env.VOLT_S3_BUCKET }),
    });
    return { worker, connection };
  } catch (err) {
    await connection.close();
    throw err;
  }
}
