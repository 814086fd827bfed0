import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BatchFileError, BatchFileWriter, batchFileSamples, readBatchFile } from '../../src/batches/batch-file.js';
import { buildBatch } from '../../src/batches/build-batch.js';
import { batchConfigSchema } from '../../src/batches/config.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { scoredGroups } from './scored-rollouts.js';
import type { SampleRow } from '../../src/contracts/sample.js';

let dir: string;

async function rowsOfSyntheticBatch(): Promise<SampleRow[]> {
  const scored = scoredGroups('run-file', 1, [
    [1, 0, 0.5],
    [0, 1, 1],
  ]);
  const build = buildBatch(
    scored,
    (ref) =>
      syntheticRollout(ref, {
        turns: 4,
        seed: ref.rolloutId.length + Number(ref.rolloutId.at(-1)),
        promptLen: 30,
        completionLen: 9,
        gapLen: 5,
        rewriteAt: [2],
      }),
    batchConfigSchema.parse({}),
  );
  const rows: SampleRow[] = [];
  for await (const row of build.samples) rows.push(row);
  return rows;
}

async function write(rows: SampleRow[], chunk?: number): Promise<string> {
  const file = path.join(dir, `b-${Math.random().toString(36).slice(2)}.safetensors`);
  const writer = await BatchFileWriter.create({ tmpDir: dir, chunk });
  for (const r of rows) await writer.add(r);
  assert.deepEqual(await writer.finish(file), { samples: rows.length, bytes: (await readFile(file)).length });
  return file;
}

void describe('batch file (safetensors columns)', () => {
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'volt-batch-file-test-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  void it('round-trips every sample, also when columns spill in chunks smaller than one sample', async () => {
    const rows = await rowsOfSyntheticBatch();
    assert.equal(rows.length, 12);
    // Logprobs are stored as float32: the trainer computes in fp32, so that is all it can use.
    const expected = rows.map((r) => ({ ...r, rollout_logprobs: r.rollout_logprobs.map(Math.fround) }));
    const files: Buffer[] = [];
    for (const chunk of [undefined, 7, 64]) {
      const file = await write(rows, chunk);
      files.push(await readFile(file));
      assert.deepEqual(readBatchFile(files.at(-1)!), expected, `chunk ${chunk}`);
      assert.equal(await batchFileSamples(file), rows.length);
    }
    assert.ok(
      files.every((f) => f.equals(files[0]!)),
      'spilling changes no byte',
    );
    assert.deepEqual(
      (await readdir(dir)).filter((f) => !f.endsWith('.safetensors')),
      [],
      'spill files are removed',
    );
  });

  void it('writes the safetensors layout: u64 header length, JSON header, contiguous aligned tensors', async () => {
    const rows = await rowsOfSyntheticBatch();
    const bytes = await readFile(await write(rows, 5));
    const n = Number(bytes.readBigUInt64LE(0));
    assert.equal((8 + n) % 8, 0, 'data starts 8-byte aligned');
    const header = JSON.parse(bytes.toString('utf8', 8, 8 + n)) as Record<
      string,
      { dtype: string; shape: number[]; data_offsets: [number, number] }
    >;
    assert.deepEqual(header.__metadata__, { format: 'volt-batch', version: '1', samples: '12', loss_scale: '1' });
    const tensors = Object.entries(header)
      .filter(([k]) => k !== '__metadata__')
      .map(([, v]) => v);
    let offset = 0;
    for (const t of tensors) {
      assert.equal(t.data_offsets[0], offset);
      assert.equal(t.data_offsets[0] % { F64: 8, I32: 4, F32: 4, U8: 1, BOOL: 1 }[t.dtype]!, 0);
      offset = t.data_offsets[1];
    }
    assert.equal(8 + n + offset, bytes.length, 'the last tensor ends the file');
    const tokens = rows.reduce((a, r) => a + r.response_ids.length, 0);
    assert.deepEqual(header.response_ids!.shape, [tokens]);
    assert.equal(header.rollout_logprobs!.dtype, 'F32');
  });

  void it('refuses a sample the trainer could not use, naming the field', async () => {
    const [row] = await rowsOfSyntheticBatch();
    const cases: [Partial<SampleRow>, RegExp][] = [
      [{ loss_mask: [1] }, /loss_mask \(1\) and rollout_logprobs \(\d+\) must match response_ids/],
      [{ prompt_ids: [1, 2.5] }, /prompt_ids\[1\] = 2.5 is not a token id/],
      [{ response_ids: row!.response_ids.map((v, i) => (i === 3 ? -1 : v)) }, /response_ids\[3\] = -1/],
      [{ prompt_ids: [2 ** 31] }, /prompt_ids\[0\] = 2147483648/],
      [{ prompt_ids: [] }, /must not be empty/],
    ];
    for (const [change, message] of cases) {
      const writer = await BatchFileWriter.create({ tmpDir: dir });
      await assert.rejects(
        writer.add({ ...row!, ...change }),
        (err: Error) => err instanceof BatchFileError && message.test(err.message),
      );
      await writer.discard();
    }
  });

  void it('reading a damaged or foreign file fails with what is wrong', async () => {
    const good = await readFile(await write(await rowsOfSyntheticBatch()));
    const n = Number(good.readBigUInt64LE(0));
    const header = good.toString('utf8', 8, 8 + n);
    const withHeader = (h: string) => {
      const json = Buffer.from(h.padEnd(n));
      assert.equal(json.length, n);
      return Buffer.concat([good.subarray(0, 8), json, good.subarray(8 + n)]);
    };
    assert.throws(() => readBatchFile(good.subarray(0, 5)), /too short/);
    assert.throws(() => readBatchFile(good.subarray(0, good.length - 4)), BatchFileError);
    assert.throws(
      () => readBatchFile(withHeader(header.replace('"volt-batch"', '"other-fmt!"'))),
      /format other-fmt!\/1, expected volt-batch\/1/,
    );
    assert.throws(
      () =>
        readBatchFile(
          withHeader(header.replace('"rollout_logprobs":{"dtype":"F32"', '"rollout_logprobs":{"dtype":"I32"')),
        ),
      /tensor rollout_logprobs: dtype I32, expected F32/,
    );
    assert.throws(
      () => readBatchFile(withHeader(header.replace('"samples":"12"', '"samples":"13"'))),
      /tensor prompt_len: 12 values, expected 13/,
    );
    assert.throws(() => readBatchFile(withHeader(`[${header.slice(1, -1)}]`)), /not a JSON object|not JSON/);
    const bad = path.join(dir, 'bad.safetensors');
    await writeFile(bad, withHeader(header.replace('"version":"1"', '"version":"9"')));
    await assert.rejects(batchFileSamples(bad), /expected volt-batch\/1/);
    await writeFile(bad, Buffer.from('{"sample_id":"jsonl, not safetensors"}\n'));
    await assert.rejects(
      batchFileSamples(bad),
      (err: Error) => err instanceof BatchFileError && /header length/.test(err.message),
    );
  });
});
