import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { CorruptObjectError } from '../../src/storage/errors.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const LINES = 50_000;
const PAD = 'x'.repeat(1000);
// ~52 MB of JSONL: holding it (or its parsed objects) in memory would show up far above this bound.
const MAX_GROWTH = 20 * 1024 * 1024;

// Measure live memory, not garbage the collector has not reached yet: expose gc() in this process.
v8.setFlagsFromString('--expose_gc');
const gc = vm.runInNewContext('gc') as () => void;
const memory = () => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

void describe('JSONL streams against a real S3 server', () => {
  let services: TestServices;
  let store: ObjectStore;

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore(services.s3);
    await store.ensureBucket();
  });
  after(async () => services?.stop());

  void it(`round-trips ${LINES} lines in order, streaming both ways with bounded memory`, async () => {
    const base = memory();
    let peak = 0;
    async function* rows() {
      for (let i = 0; i < LINES; i++) {
        if (i % 5000 === 0) peak = Math.max(peak, memory() - base);
        yield { i, group: `g${i % 8}`, pad: PAD };
      }
    }
    const put = await store.putJsonl('t/jsonl/big.jsonl', rows());
    assert.equal(put.size, (await store.stat(put.key))?.size);
    assert.ok(put.size > LINES * 1000);

    let n = 0;
    for await (const row of store.readJsonl<{ i: number; group: string; pad: string }>(put.key)) {
      assert.equal(row.i, n);
      assert.equal(row.pad.length, 1000);
      n += 1;
      if (n % 5000 === 0) peak = Math.max(peak, memory() - base);
    }
    assert.equal(n, LINES);
    assert.ok(
      peak < MAX_GROWTH,
      `memory grew by ${(peak / 2 ** 20).toFixed(1)} MiB while streaming ${(put.size / 2 ** 20).toFixed(1)} MiB`,
    );
  });

  void it('stops downloading when the reader stops early', async () => {
    await store.putJsonl(
      't/jsonl/small.jsonl',
      Array.from({ length: 100 }, (_, i) => ({ i })),
    );
    const seen: number[] = [];
    for await (const row of store.readJsonl<{ i: number }>('t/jsonl/small.jsonl')) {
      seen.push(row.i);
      if (seen.length === 3) break;
    }
    assert.deepEqual(seen, [0, 1, 2]);
  });

  void it('names the line of a corrupt record and skips blank lines', async () => {
    await store.putBytes('t/jsonl/bad.jsonl', Buffer.from('{"a":1}\n\n{"a":2}\n{"a":\n'));
    const seen: unknown[] = [];
    await assert.rejects(
      async () => {
        for await (const row of store.readJsonl('t/jsonl/bad.jsonl')) seen.push(row);
      },
      (e: Error) => e instanceof CorruptObjectError && /line 4/.test(e.message) && /bad\.jsonl/.test(e.message),
    );
    assert.deepEqual(seen, [{ a: 1 }, { a: 2 }]);
  });

  void it('rejects items that are not JSON-serialisable', async () => {
    await assert.rejects(
      store.putJsonl('t/jsonl/undef.jsonl', [{ a: 1 }, undefined]),
      /item 1 is not JSON-serialisable/,
    );
    assert.equal(await store.stat('t/jsonl/undef.jsonl'), null);
  });
});
