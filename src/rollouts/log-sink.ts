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

/**
 * Upload an attempt's two logs one after the other: rclone's S3 server (the embedded store) can answer 500
 * when two PUTs create the same new prefix at once.
 */
export async function uploadLogs(sink: LogSink, ref: RolloutRef, stdout: Uint8Array, stderr: Uint8Array): Promise<void> {
  await sink.put(keys.rolloutLog(ref, 'stdout'), stdout);
  await sink.put(keys.rolloutLog(ref, 'stderr'), stderr);
}
