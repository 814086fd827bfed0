import type { Client } from 'minio';
import { keys } from '../storage/keys.js';

export interface SmokeDeps {
  s3: Client;
  bucket: string;
}

export interface SmokeRecord {
  runId: string;
  message: string;
  writtenBy: string;
}

async function readAll(stream: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** The smallest real round trip through the stack: an activity writes to the object store, another reads it back. */
export const createSmokeActivities = (deps: SmokeDeps) => ({
  async writeSmokeObject(input: { runId: string; message: string }): Promise<{ key: string; bytes: number }> {
    const key = `${keys.run(input.runId)}smoke.json`;
    const record: SmokeRecord = { runId: input.runId, message: input.message, writtenBy: `pid ${process.pid}` };
    const body = Buffer.from(JSON.stringify(record));
    await deps.s3.putObject(deps.bucket, key, body, body.length, { 'Content-Type': 'application/json' });
    return { key, bytes: body.length };
  },

  async readSmokeObject(key: string): Promise<SmokeRecord> {
    return JSON.parse(await readAll(await deps.s3.getObject(deps.bucket, key))) as SmokeRecord;
  },
});

export type SmokeActivities = ReturnType<typeof createSmokeActivities>;
