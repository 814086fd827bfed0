import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreUnreachable } from '../storage/errors.js';
import type { ObjectStore } from '../storage/object-store.js';
import { keys } from '../storage/keys.js';
import type { LogSink } from './spec.js';
import type { RolloutRef } from '../contracts/rollout.js';

/** Rollout logs go to the object store under keys.rolloutLog(...), as plain text. */
export function objectStoreLogSink(store: Pick<ObjectStore, 'putBytes'>): LogSink {
  return {
    async put(key, bytes) {
      const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      await store.putBytes(key, buf, buf.length, 'text/plain; charset=utf-8');
    },
  };
}

/** How long an attempt's log upload waits out an unreachable object store before the attempt is infra_failed. */
export const LOG_UPLOAD_PATIENCE_MS = 60_000;

/**
 * Upload an attempt's two logs one after the other: rclone's S3 server (the embedded store) can answer 500
 * when two PUTs create the same new prefix at once. An unreachable store (a restart, a blip) is retried with backoff
 * for up to `patienceMs`: an agent that finished during a short outage keeps its attempt instead of running again.
 */
export async function uploadLogs(
  sink: LogSink,
  ref: RolloutRef,
  stdout: Uint8Array,
  stderr: Uint8Array,
  patienceMs = LOG_UPLOAD_PATIENCE_MS,
): Promise<void> {
  const deadline = Date.now() + patienceMs;
  await putPatiently(sink, keys.rolloutLog(ref, 'stdout'), stdout, deadline);
  await putPatiently(sink, keys.rolloutLog(ref, 'stderr'), stderr, deadline);
}

async function putPatiently(sink: LogSink, key: string, bytes: Uint8Array, deadline: number): Promise<void> {
  for (let delay = 250; ; delay = Math.min(2 * delay, 4_000)) {
    try {
      return await sink.put(key, bytes);
    } catch (e) {
      if (!isStoreUnreachable(e) || Date.now() + delay > deadline) throw e;
      await sleep(delay);
    }
  }
}
