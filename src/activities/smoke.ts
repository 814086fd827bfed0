import { text } from 'node:stream/consumers';
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from 'minio';
import { FailureType } from '../contracts/failures.js';
import { keys, UnsafeIdError } from '../storage/keys.js';

export interface SmokeDeps {
  s3: Client;
  bucket: string;
}

export interface SmokeRecord {
  runId: string;
  message: string;
  writtenBy: string;
}

/** A bad run id can never succeed, so it fails the workflow at once instead of being retried. */
function smokeKey(runId: string): string {
  try {
    return `${keys.run(runId)}smoke.json`;
  } catch (err) {
    if (err instanceof UnsafeIdError)
      throw ApplicationFailure.create({ type: FailureType.InvalidConfig, message: err.message, nonRetryable: true });
    throw err;
  }
}

/** The smallest real round trip through the stack: an activity writes to the object store, another reads it back. */
export const createSmokeActivities = (deps: SmokeDeps) => ({
  async writeSmokeObject(input: { runId: string; message: string }): Promise<{ key: string; bytes: number }> {
    const key = smokeKey(input.runId);
    const record: SmokeRecord = { runId: input.runId, message: input.message, writtenBy: `pid ${process.pid}` };
    const body = Buffer.from(JSON.stringify(record));
    await deps.s3.putObject(deps.bucket, key, body, body.length, { 'Content-Type': 'application/json' });
    return { key, bytes: body.length };
  },

  async readSmokeObject(key: string): Promise<SmokeRecord> {
    return JSON.parse(await text(await deps.s3.getObject(deps.bucket, key))) as SmokeRecord;
  },
});

export type SmokeActivities = ReturnType<typeof createSmokeActivities>;
