import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { objectStoreLogSink } from '../../src/rollouts/log-sink.js';
import type { LogSink, RolloutSpecInput } from '../../src/rollouts/spec.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices } from '../helpers/services.js';

export const agentsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'agents');
export const agent = (name: string) => path.join(agentsDir, name);

/** A real S3 server (rclone) with the object store and the rollout log sink over it. */
export async function startLogStore(): Promise<{
  store: ObjectStore;
  sink: LogSink;
  read(key: string): Promise<Buffer>;
  stop(): Promise<void>;
}> {
  const services = await startTestServices({ s3: true });
  const store = createObjectStore(services.s3);
  return { store, sink: objectStoreLogSink(store), read: (key) => store.getBytes(key), stop: services.stop };
}

export const tempDir = (prefix: string) => mkdtemp(path.join(tmpdir(), `volt-${prefix}-`));

export function specFor(command: string[], over: Partial<RolloutSpecInput> = {}): RolloutSpecInput {
  return {
    ref: { runId: 'run-1', iteration: 0, rolloutId: 'r-1', attempt: 0 },
    taskId: 'task-7',
    groupId: 'g-1',
    mode: 'train',
    taskInput: { question: 'What is 2+2?' },
    agent: { command },
    gateway: { baseUrl: 'http://127.0.0.1:9/r/tok-0/v1', token: 'tok-0' },
    timeoutMs: 30_000,
    ...over,
  };
}
