import type { ObjectStore } from '../storage/object-store.js';
import type { LogSink } from './spec.js';

/** Rollout logs go to the object store under keys.rolloutLog(...), as plain text. */
export function objectStoreLogSink(store: Pick<ObjectStore, 'putBytes'>): LogSink {
  return {
    async put(key, bytes) {
      const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      await store.putBytes(key, buf, buf.length, 'text/plain; charset=utf-8');
    },
  };
}
