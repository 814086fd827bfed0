import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import type { Span } from '../../src/contracts/span.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';
import { buildBatchFile, storeSpanSource } from '../../src/batches/batch-io.js';
import { batchConfigSchema } from '../../src/batches/config.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { CorruptSpanError, readSpans } from '../../src/storage/spans.js';
import { compressSegment } from '../../src/storage/span-compression.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { UploadEncoder } from '../../src/gateway/recording/upload-encoder.js';
import { recordedRollout } from '../gateway/engine-spans.js';
import { scoredGroups } from '../batches/scored-rollouts.js';

const lines = (xs: string[]) => Buffer.from(xs.map((x) => `${x}\n`).join(''));

async function collect(store: ObjectStore, ref: RolloutRef): Promise<Span[]> {
  const out: Span[] = [];
  for await (const s of readSpans(store, ref)) out.push(s);
  return out;
}

void describe('stored call records: brotli, gzip and plain segments and single objects read as the spans of the calls', () => {
  let services: TestServices;
  let mixed: ObjectStore;
  let plain: ObjectStore;
  const scored = scoredGroups('fmt-run', 1, [
    [1, 0, 0.5],
    [0, 1],
  ]);
  const calls = new Map<string, ReturnType<typeof recordedRollout>>();

  before(async () => {
    services = await startTestServices({ s3: true });
    mixed = createObjectStore({ ...services.s3, bucket: 'volt-fmt-mixed' });
    plain = createObjectStore({ ...services.s3, bucket: 'volt-fmt-plain' });
    await mixed.ensureBucket();
    await plain.ensureBucket();
    const encoder = new UploadEncoder({ worker: true });
    for (const { result } of scored) {
      const r = result.ref;
      const recorded = recordedRollout(r, {
        turns: 6,
        seed: r.rolloutId.charCodeAt(1) * 13 + r.rolloutId.length,
        promptLen: 300,
        completionLen: 40,
      });
      calls.set(r.rolloutId, recorded);
      // The gateway's WAL records as its uploader stores them (the encoder thread only compresses): a brotli segment
      // for 0..2, a gzip one for 3..4 and a single brotli record for 5; and all six as one plain segment.
      const seg = await encoder.encode({
        entries: recorded.slice(0, 3).map((c) => ({ json: c.record })),
        segment: true,
        compression: 'brotli',
      });
      await mixed.putBytes(keys.spanSegment(r, 0, 2), seg.body, seg.body.length, seg.contentType);
      await mixed.putBytes(keys.spanSegment(r, 3, 4), gzipSync(lines(recorded.slice(3, 5).map((c) => c.record))));
      const one = await encoder.encode({
        entries: [{ json: recorded[5]!.record }],
        segment: false,
        compression: 'brotli',
      });
      await mixed.putBytes(keys.span(r, 5), one.body);
      await plain.putBytes(keys.spanSegment(r, 0, 5), lines(recorded.map((c) => c.record)));
    }
    await encoder.close();
  });
  after(async () => services?.stop());

  void it('readSpans yields the spans the call path built, engine answers included', async () => {
    for (const { result } of scored) {
      const expected = calls.get(result.ref.rolloutId)!.map((c) => JSON.parse(JSON.stringify(c.span)) as Span);
      const got = await collect(mixed, result.ref);
      assert.equal(got.length, 6);
      assert.deepStrictEqual(got, expected);
      assert.deepStrictEqual(await collect(plain, result.ref), expected, 'whatever the layout and compression');
      const answer = got[2]!.response as {
        prompt_token_ids: number[];
        choices: { token_ids: number[]; logprobs: { content: Record<string, unknown>[] } }[];
      };
      assert.deepEqual(answer.prompt_token_ids, got[2]!.promptTokenIds);
      assert.deepEqual(
        Object.keys(answer.choices[0]!.logprobs.content[0]!),
        ['token', 'logprob', 'bytes', 'top_logprobs'],
        "entries keep the engine's field order",
      );
    }
  });

  void it('builds a byte-identical batch file from either layout', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-fmt-'));
    try {
      const config = batchConfigSchema.parse({ estimator: 'grpo', minGroupSize: 2 });
      const a = await buildBatchFile(path.join(dir, 'mixed.safetensors'), scored, config, storeSpanSource(mixed), {
        tmpDir: dir,
      });
      const b = await buildBatchFile(path.join(dir, 'plain.safetensors'), scored, config, storeSpanSource(plain), {
        tmpDir: dir,
      });
      assert.ok(a.manifest.counts.samples > 0);
      assert.deepEqual(b.manifest, a.manifest);
      assert.ok(
        fs
          .readFileSync(path.join(dir, 'plain.safetensors'))
          .equals(fs.readFileSync(path.join(dir, 'mixed.safetensors'))),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('names the object of a line that is not a call record, of a corrupt gzip or brotli segment, and the field a record breaks', async () => {
    const r: RolloutRef = { runId: 'fmt-run', iteration: 1, rolloutId: 'bad', attempt: 0 };
    const [call] = recordedRollout(r, { turns: 1, seed: 1 });
    await plain.putBytes(keys.span(r, 0), Buffer.from(JSON.stringify(call!.span)));
    await assert.rejects(
      collect(plain, r),
      (e: Error) =>
        e instanceof CorruptSpanError && /00000000\.json/.test(e.message) && /not a call record/.test(e.message),
    );
    const r2 = { ...r, rolloutId: 'bad-gz' };
    await plain.putBytes(keys.spanSegment(r2, 0, 1), gzipSync(lines([call!.record])).subarray(0, 20));
    await assert.rejects(
      collect(plain, r2),
      (e: Error) => e instanceof CorruptSpanError && /00000000-00000001\.jsonl/.test(e.message),
    );
    const r3 = { ...r, rolloutId: 'bad-br' };
    await plain.putBytes(keys.spanSegment(r3, 0, 1), compressSegment(lines([call!.record]), 'brotli').subarray(0, 20));
    await assert.rejects(
      collect(plain, r3),
      (e: Error) => e instanceof CorruptSpanError && /not brotli, gzip or JSON text/.test(e.message),
    );
    // A stored call record whose meta breaks the Span contract is named by line and field.
    const r4 = { ...r, rolloutId: 'bad-rec' };
    const record = JSON.parse(call!.record) as { meta: Record<string, unknown> };
    record.meta.seq = 'one';
    await plain.putBytes(
      keys.spanSegment(r4, 0, 1),
      compressSegment(lines([call!.record, JSON.stringify(record)]), 'brotli'),
    );
    await assert.rejects(
      collect(plain, r4),
      (e: Error) =>
        e instanceof CorruptSpanError &&
        /line 2: seq:/.test(e.message) &&
        (e as CorruptSpanError & { fields: string[] }).fields.includes('seq'),
    );
  });
});
