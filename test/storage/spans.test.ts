import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Span } from '../../src/contracts/span.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { CorruptSpanError, countSpans, parseSpanKey, readSpans, segmentKeyFor } from '../../src/storage/spans.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { callRecordLine, callRecordSegment } from '../helpers/stored-spans.js';

// A full span (it must pass the Span contract on read); the note rides in spanId so tests can tell copies apart.
const span = (ref: RolloutRef, seq: number, note = 'a'): Span => ({
  ...syntheticRollout(ref, { turns: 1, seed: seq })[0]!,
  seq,
  spanId: note,
});
const jsonl = callRecordSegment;
const single = (s: Span) => Buffer.from(callRecordLine(s));

async function collect(store: ObjectStore, ref: RolloutRef) {
  const out: { seq: number; note: string }[] = [];
  for await (const s of readSpans(store, ref)) out.push({ seq: s.seq, note: s.spanId });
  return out;
}

void describe('readSpans against a real S3 server (rclone serve s3)', () => {
  let services: TestServices;
  let store: ObjectStore;
  const ref = (rolloutId: string): RolloutRef => ({ runId: 'spans-run', iteration: 2, rolloutId, attempt: 1 });

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-spans-test' });
    await store.ensureBucket();
  });
  after(async () => services?.stop());

  void it('names segments next to single spans, and parses both back', () => {
    const r = ref('keys');
    assert.equal(
      keys.spanSegment(r, 3, 12),
      'runs/spans-run/iterations/000002/rollouts/keys/attempt-001/spans/00000003-00000012.jsonl',
    );
    assert.equal(segmentKeyFor(keys.span(r, 7), 3, 12), keys.spanSegment(r, 3, 12));
    assert.deepEqual(parseSpanKey(keys.spanSegment(r, 3, 12)), { spansPrefix: keys.spans(r), first: 3, last: 12 });
    assert.deepEqual(parseSpanKey(keys.span(r, 9)), { spansPrefix: keys.spans(r), first: 9, last: 9 });
    assert.equal(parseSpanKey(`${keys.spans(r)}00000012-00000003.jsonl`), null);
    assert.equal(parseSpanKey(keys.rolloutResult(r)), null);
    assert.throws(() => segmentKeyFor(keys.spanSegment(r, 1, 2), 1, 2), /not a single-span key/);
  });

  void it('yields nothing for an attempt without spans', async () => {
    assert.deepEqual(await collect(store, ref('empty')), []);
    assert.equal(await countSpans(store, ref('empty')), 0);
  });

  void it('reads segments in seq order, not key order', async () => {
    const r = ref('order');
    // 00000010-... sorts after 00000002-... as a key; spans inside a segment may be out of order too.
    await store.putBytes(keys.spanSegment(r, 10, 11), jsonl([span(r, 11), span(r, 10)]));
    await store.putBytes(keys.spanSegment(r, 2, 9), jsonl([2, 3, 4, 5, 6, 7, 8, 9].map((s) => span(r, s))));
    await store.putBytes(keys.spanSegment(r, 0, 1), jsonl([span(r, 0), span(r, 1)]));
    assert.deepEqual(
      (await collect(store, r)).map((s) => s.seq),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    assert.equal(await countSpans(store, r), 12);
  });

  void it('reads mixed layouts and yields a seq stored twice once (single span, overlapping segments)', async () => {
    const r = ref('mixed');
    await store.putBytes(keys.span(r, 0), single(span(r, 0)));
    await store.putBytes(keys.span(r, 3), single(span(r, 3)));
    await store.putBytes(keys.spanSegment(r, 1, 3), jsonl([span(r, 1), span(r, 2), span(r, 3)]));
    // A WAL replay grouped differently: an overlapping segment with the same spans.
    await store.putBytes(keys.spanSegment(r, 2, 5), jsonl([2, 3, 4, 5].map((s) => span(r, s))));
    await store.putJson(`${keys.spans(r)}notes.json`, { not: 'a span' });
    const got = await collect(store, r);
    assert.deepEqual(
      got.map((s) => s.seq),
      [0, 1, 2, 3, 4, 5],
    );
    assert.equal(await countSpans(store, r), 6);
  });

  void it('names the object and line of a corrupt span', async () => {
    const r = ref('corrupt');
    await store.putBytes(
      keys.spanSegment(r, 0, 1),
      Buffer.from(`${callRecordLine(span(r, 0))}\n{"callRecord":1,"meta":\n`),
    );
    await assert.rejects(
      collect(store, r),
      (err: Error) => err instanceof CorruptSpanError && err.message.includes('00000000-00000001.jsonl: line 2'),
    );
  });
});
