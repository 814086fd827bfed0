import assert from 'node:assert/strict';
import fs from 'node:fs';
import { brotliDecompressSync } from 'node:zlib';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpanUploader } from '../../src/gateway/recording/uploader.js';
import { WriteAheadLog } from '../../src/gateway/recording/wal.js';
import { keys } from '../../src/storage/keys.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { countSpans, readSpans } from '../../src/storage/spans.js';
import type { TestServices } from '../helpers/services.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { callRecordLine } from '../helpers/stored-spans.js';
import { startStore } from './harness.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';

let services: TestServices;
let store: ObjectStore;
before(async () => ({ services, store } = await startStore()));
after(async () => services?.stop());

const ref = (rolloutId: string): RolloutRef => ({ runId: 'seg-run', iteration: 1, rolloutId, attempt: 0 });
// A call record, as the gateway's WAL holds it: readSpans builds its span and checks the Span contract.
const span = (r: RolloutRef, seq: number) =>
  callRecordLine({ ...syntheticRollout(r, { turns: 1, seed: seq })[0]!, seq });

/**
 * The real store, recording the key of every put that succeeded. A put that failed (a loaded CI machine's S3 server
 * can drop one) is retried by the uploader and is not a second upload; two successful puts of one key are.
 */
function recording(puts: string[]): ObjectStore {
  return Object.assign(Object.create(store) as ObjectStore, {
    putBytes: async (...args: Parameters<ObjectStore['putBytes']>) => {
      const out = await store.putBytes(...args);
      puts.push(args[0]);
      return out;
    },
  });
}

async function upload(spans: [RolloutRef, number][], opts: { maxSegmentSpans?: number } = {}) {
  const dir = fs.mkdtempSync(path.join(services.dataDir, 'seg-'));
  const wal = new WriteAheadLog(dir, { rotateIdleBytes: 0 });
  await wal.open();
  const entries = await Promise.all(spans.map(([r, seq]) => wal.append(keys.span(r, seq), span(r, seq))));
  const puts: string[] = [];
  // Held back while "busy" until flushed, so every span is queued before the first put.
  const uploader = new SpanUploader(recording(puts), wal, {
    ...opts,
    maxDeferredBytes: 1 << 20,
    idleForMs: () => 0,
    maxDeferMs: 60_000,
  });
  for (const e of entries) uploader.enqueue(e);
  await uploader.flush();
  assert.equal(uploader.pendingCount, 0);
  await wal.close();
  // The sealed segment's file is removed in the background once its last entry is marked uploaded.
  for (let i = 0; i < 50 && fs.readdirSync(dir).length > 0; i++) await sleep(20);
  return { puts: puts.sort(), walFiles: fs.readdirSync(dir) };
}

async function seqs(r: RolloutRef): Promise<number[]> {
  const out: number[] = [];
  for await (const s of readSpans(store, r)) out.push(s.seq);
  return out;
}

void describe('span uploader segments (real S3 server)', () => {
  void it('puts one segment per run of consecutive spans of an attempt, and releases the WAL after', async () => {
    const [a, b] = [ref('a'), ref('b')];
    const { puts, walFiles } = await upload([
      [a, 0],
      [b, 0],
      [a, 1],
      [a, 2],
      [a, 5],
      [b, 1],
      [a, 4],
      [b, 2],
    ]);
    assert.deepEqual(puts, [keys.spanSegment(a, 0, 2), keys.spanSegment(a, 4, 5), keys.spanSegment(b, 0, 2)].sort());
    assert.deepEqual(await seqs(a), [0, 1, 2, 4, 5]);
    assert.deepEqual(await seqs(b), [0, 1, 2]);
    const body = await store.getBytes(keys.spanSegment(a, 4, 5));
    assert.equal(body[0]! & 0x0f, 0x0b, 'segments are brotli streams with a 22-bit window');
    assert.equal(brotliDecompressSync(body).toString(), `${span(a, 4)}\n${span(a, 5)}\n`);
    assert.deepEqual(walFiles, [], 'every WAL entry was marked uploaded');
  });

  void it('caps a segment at maxSegmentSpans', async () => {
    const c = ref('c');
    const { puts } = await upload(
      Array.from({ length: 10 }, (_, i) => [c, i] as [RolloutRef, number]),
      { maxSegmentSpans: 4 },
    );
    assert.deepEqual(puts, [keys.spanSegment(c, 0, 3), keys.spanSegment(c, 4, 7), keys.spanSegment(c, 8, 9)]);
    assert.deepEqual(await seqs(c), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  void it('a replay grouped differently overlaps what an earlier process stored; each span reads back once', async () => {
    const d = ref('d');
    // The crashed process had stored spans 0-1 before dying; its WAL still holds 0-3.
    await store.putBytes(keys.spanSegment(d, 0, 1), Buffer.from(`${span(d, 0)}\n${span(d, 1)}\n`));
    const { puts } = await upload([
      [d, 0],
      [d, 1],
      [d, 2],
      [d, 3],
    ]);
    assert.deepEqual(puts, [keys.spanSegment(d, 0, 3)]);
    assert.deepEqual(await seqs(d), [0, 1, 2, 3]);
    assert.equal(await countSpans(store, d), 4);
  });
});
