import { mkdtemp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LogSink, RolloutSpecInput } from '../../src/rollouts/spec.js';

export const agentsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'agents');
export const agent = (name: string) => path.join(agentsDir, name);

/** A LogSink over a real directory, for tests that do not start an S3 server. */
export class DirLogSink implements LogSink {
  readonly puts: string[] = [];
  constructor(readonly dir: string) {}
  async put(key: string, bytes: Uint8Array): Promise<void> {
    const file = path.join(this.dir, key);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, bytes);
    this.puts.push(key);
  }
  read(key: string): Promise<Buffer> {
    return readFile(path.join(this.dir, key));
  }
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
