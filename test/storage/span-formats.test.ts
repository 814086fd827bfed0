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

void describe('span formats: segments from before compact spans, compact (gzip) segments and stored call records read alike', () => {
  let services: TestServices;
  let old: ObjectStore;
  let compact: ObjectStore;
  let records: ObjectStore;
  const scored = scoredGroups('fmt-run', 1, [
    [1, 0, 0.5],
    [0, 1],
  ]);

  before(async () => {
    services = await startTestServices({ s3: true });
    old = createObjectStore({ ...services.s3, bucket: 'volt-fmt-old' });
    compact = createObjectStore({ ...services.s3, bucket: 'volt-fmt-new' });
    await old.ensureBucket();
    await compact.ensureBucket();
    records = createObjectStore({ ...services.s3, bucket: 'volt-fmt-rec' });
    await records.ensureBucket();
    const encoder = new UploadEncoder({ worker: true });
    // The same recorded calls, stored as gateways stored them before: whole JSON spans, then compact span lines (a
    // gzip'd segment for seqs 0..2, a plain compact segment for 3..4 and a single compact span for the last).
    for (const { result } of scored) {
      const r = result.ref;
      const calls = recordedRollout(r, {
        turns: 6,
        seed: r.rolloutId.charCodeAt(1) * 13 + r.rolloutId.length,
        promptLen: 300,
        completionLen: 40,
      });
      await old.putBytes(keys.spanSegment(r, 0, 5), lines(calls.map((c) => c.today)));
      await compact.putBytes(keys.spanSegment(r, 0, 2), gzipSync(lines(calls.slice(0, 3).map((c) => c.stored))));
      await compact.putBytes(keys.spanSegment(r, 3, 4), lines(calls.slice(3, 5).map((c) => c.stored)));
      await compact.putBytes(keys.span(r, 5), Buffer.from(calls[5]!.stored));
      // And as the gateway stores them now: its WAL's call records as they are (the uploader's encoder thread only
      // compresses them), a brotli segment for 0..3, single records for 4 and 5; readSpans builds the spans.
      const seg = await encoder.encode({
        entries: calls.slice(0, 4).map((c) => ({ json: c.record })),
        segment: true,
        compression: 'brotli',
      });
      await records.putBytes(keys.spanSegment(r, 0, 3), seg.body, seg.body.length, seg.contentType);
      for (const seq of [4, 5])
        await records.putBytes(
          keys.span(r, seq),
          (await encoder.encode({ entries: [{ json: calls[seq]!.record }], segment: false, compression: 'brotli' }))
            .body,
        );
    }
    await encoder.close();
  });
  after(async () => services?.stop());

  void it('readSpans yields identical spans, engine answers included, from either', async () => {
    for (const { result } of scored) {
      const before = await collect(old, result.ref);
      const now = await collect(compact, result.ref);
      assert.equal(now.length, 6);
      assert.deepStrictEqual(now, before);
      assert.deepStrictEqual(await collect(records, result.ref), before, 'stored call records read as the same spans');
      const answer = now[2]!.response as {
        prompt_token_ids: number[];
        choices: { token_ids: number[]; logprobs: { content: Record<string, unknown>[] } }[];
      };
      assert.deepEqual(answer.prompt_token_ids, now[2]!.promptTokenIds);
      assert.deepEqual(
        Object.keys(answer.choices[0]!.logprobs.content[0]!),
        ['token', 'logprob', 'bytes', 'top_logprobs'],
        "entries keep the engine's field order",
      );
    }
  });

  void it('builds a byte-identical batch file from either', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-fmt-'));
    try {
      const config = batchConfigSchema.parse({ estimator: 'grpo', minGroupSize: 2 });
      const a = await buildBatchFile(path.join(dir, 'old.safetensors'), scored, config, storeSpanSource(old), {
        tmpDir: dir,
      });
      const b = await buildBatchFile(path.join(dir, 'new.safetensors'), scored, config, storeSpanSource(compact), {
        tmpDir: dir,
      });
      assert.ok(a.manifest.counts.samples > 0);
      assert.deepEqual(b.manifest, a.manifest);
      assert.ok(
        fs.readFileSync(path.join(dir, 'new.safetensors')).equals(fs.readFileSync(path.join(dir, 'old.safetensors'))),
      );
      const c = await buildBatchFile(path.join(dir, 'rec.safetensors'), scored, config, storeSpanSource(records), {
        tmpDir: dir,
      });
      assert.deepEqual(c.manifest, a.manifest);
      assert.ok(
        fs.readFileSync(path.join(dir, 'rec.safetensors')).equals(fs.readFileSync(path.join(dir, 'old.safetensors'))),
        'from call records too',
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('names the object of a compact span whose elided paths do not fit, and of a corrupt gzip or brotli segment', async () => {
    const r: RolloutRef = { runId: 'fmt-run', iteration: 1, rolloutId: 'bad', attempt: 0 };
    const [call] = recordedRollout(r, { turns: 1, seed: 1 });
    const wrong = JSON.parse(call!.stored) as Record<string, unknown>;
    wrong.elided = ['choices.4.token_ids'];
    await compact.putBytes(keys.span(r, 0), Buffer.from(JSON.stringify(wrong)));
    await assert.rejects(
      collect(compact, r),
      (e: Error) =>
        e instanceof CorruptSpanError && /00000000\.json/.test(e.message) && /choices\.4\.token_ids/.test(e.message),
    );
    const r2 = { ...r, rolloutId: 'bad-gz' };
    await compact.putBytes(keys.spanSegment(r2, 0, 1), gzipSync(lines([call!.stored])).subarray(0, 20));
    await assert.rejects(
      collect(compact, r2),
      (e: Error) => e instanceof CorruptSpanError && /00000000-00000001\.jsonl/.test(e.message),
    );
    const r3 = { ...r, rolloutId: 'bad-br' };
    await compact.putBytes(
      keys.spanSegment(r3, 0, 1),
      compressSegment(lines([call!.stored]), 'brotli').subarray(0, 20),
    );
    await assert.rejects(
      collect(compact, r3),
      (e: Error) => e instanceof CorruptSpanError && /not brotli, gzip or JSON text/.test(e.message),
    );
    // A stored call record whose meta breaks the Span contract is named by line and field.
    const r4 = { ...r, rolloutId: 'bad-rec' };
    const record = JSON.parse(call!.record) as { meta: Record<string, unknown> };
    record.meta.seq = 'one';
    await records.putBytes(
      keys.spanSegment(r4, 0, 1),
      compressSegment(lines([call!.record, JSON.stringify(record)]), 'brotli'),
    );
    await assert.rejects(
      collect(records, r4),
      (e: Error) =>
        e instanceof CorruptSpanError &&
        /line 2: seq:/.test(e.message) &&
        (e as CorruptSpanError & { fields: string[] }).fields.includes('seq'),
    );
  });
});
