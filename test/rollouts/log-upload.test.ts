import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uploadLogs } from '../../src/rollouts/log-sink.js';
import type { LogSink } from '../../src/rollouts/spec.js';
import { toStoreError } from '../../src/storage/errors.js';

const ref = { runId: 'run-1', iteration: 0, rolloutId: 'g0-r0', attempt: 0 };
const ctx = { op: 'put', bucket: 'volt', endpoint: 'http://127.0.0.1:9', key: 'k' };
// The typed errors the object store raises (toStoreError maps the client's error codes as it does for minio's).
const refused = () => toStoreError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), ctx);
const badKeys = () => toStoreError(Object.assign(new Error('bad key'), { code: 'InvalidAccessKeyId' }), ctx);

/** FAKE log sink: fails its first `failures` puts with `error`, then stores; it records every key it stored. */
function flakySink(failures: number, error: () => Error): LogSink & { stored: string[]; calls: number } {
  const sink = {
    stored: [] as string[],
    calls: 0,
    async put(key: string, bytes: Uint8Array) {
      assert.ok(bytes instanceof Uint8Array, 'the sink gets bytes');
      sink.calls++;
      if (sink.calls <= failures) throw error();
      sink.stored.push(key);
    },
  };
  return sink;
}

void describe('uploadLogs waits out an unreachable object store (FAKE sink)', () => {
  void it('retries while the store refuses connections, then stores both logs in order', async () => {
    const sink = flakySink(3, refused);
    await uploadLogs(sink, ref, Buffer.from('out'), Buffer.from('err'), 10_000);
    assert.equal(sink.calls, 5);
    assert.deepEqual(
      sink.stored.map((k) => k.split('/').at(-1)),
      ['stdout.log', 'stderr.log'],
    );
  });

  void it("gives up after its patience with the store's own error", async () => {
    const sink = flakySink(1_000, refused);
    await assert.rejects(
      uploadLogs(sink, ref, Buffer.from('out'), Buffer.from('err'), 600),
      /unavailable: ECONNREFUSED during put/,
    );
    assert.ok(sink.calls >= 2 && sink.calls <= 4, `${sink.calls} tries in 600 ms`);
  });

  void it('does not wait on an error retrying cannot fix (refused credentials)', async () => {
    const sink = flakySink(1_000, badKeys);
    await assert.rejects(uploadLogs(sink, ref, Buffer.from('out'), Buffer.from('err'), 10_000), /InvalidAccessKeyId/);
    assert.equal(sink.calls, 1);
  });
});
