import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readBatchFile } from '../../src/batches/batch-file.js';
import { storeSpanSource, writeBatch } from '../../src/batches/batch-io.js';
import { batchConfigSchema } from '../../src/batches/config.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { loadEvidence } from '../../src/rewards/evidence.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { scoredGroups } from './scored-rollouts.js';
import { batchManifestSchema } from '../../src/contracts/batch-manifest.js';
import { callRecordLine, callRecordSegment } from '../helpers/stored-spans.js';

let services: TestServices;
let store: ObjectStore;
const scored = scoredGroups('run-io', 2, [
  [1, 0, 0.5],
  [0, 1],
]);

void describe('batch I/O through a real S3 server (rclone)', () => {
  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore(services.s3);
    for (const [i, s] of scored.entries()) {
      // Written out of order: the builder must follow seq order, not upload order; every other rollout as the gateway
      // uploads it (one segment), the rest one object per span.
      const spans = syntheticRollout(s.result.ref, {
        turns: 3,
        seed: i,
        promptLen: 12,
        completionLen: 5,
        gapLen: 2,
        rewriteAt: i === 1 ? [2] : [],
      });
      if (i % 2 === 1)
        await store.putBytes(keys.spanSegment(s.result.ref, 0, spans.length - 1), callRecordSegment(spans.reverse()));
      else
        for (const span of spans.reverse())
          await store.putBytes(keys.span(s.result.ref, span.seq), Buffer.from(callRecordLine(span)));
    }
    await store.putJson(keys.agentRewards(scored[0]!.result.ref), {
      rewards: [
        { value: 0.3, name: 'tests', at: 'x' },
        { value: 0.9, name: null, at: 'y' },
      ],
    });
  });
  after(async () => {
    await services?.stop();
  });

  void it('writes samples.safetensors and manifest.json to keys.batch / keys.batchManifest', async () => {
    const written = await writeBatch(store, 'run-io', 2, scored, batchConfigSchema.parse({ estimator: 'rloo' }));
    assert.equal(written.samplesKey, 'runs/run-io/iterations/000002/batch/samples.safetensors');
    const bytes = await store.getBytes(written.samplesKey);
    assert.equal(bytes.length, written.bytes);
    const rows = readBatchFile(bytes);
    const manifest = await store.getJson(written.manifestKey, batchManifestSchema);
    assert.equal(rows.length, 6, 'five rollouts, one split by a rewritten history');
    assert.equal(manifest.counts.samples, 6);
    assert.equal(manifest.counts.transitions, 15);
    assert.equal(manifest.mergeRate, 9 / 10);
    assert.deepEqual(
      manifest.breaks.map((b) => [b.spanId, b.reason]),
      [['g0-r1-a0-2', 'prefix_mismatch']],
    );
    assert.deepEqual(
      rows.filter((r) => r.rollout_id === 'g0-r1').map((r) => r.span_ids),
      [['g0-r1-a0-0', 'g0-r1-a0-1'], ['g0-r1-a0-2']],
    );
    for (const r of rows) assert.equal(manifest.lineage[r.span_ids[0]!], r.sample_id);
    // rloo on [1, 0, 0.5]: 1 - 0.25, 0 - 0.75, 0.5 - 0.5
    assert.deepEqual(
      rows.filter((r) => r.group_id === 'g0').map((r) => r.advantage),
      [0.75, -0.75, -0.75, 0],
    );
  });

  void it('a rejection-sampling batch tells the trainer to fit it by NLL (header objective sft); an RL one says nothing', async () => {
    const header = (bytes: Buffer) =>
      (JSON.parse(bytes.toString('utf8', 8, 8 + Number(bytes.readBigUInt64LE(0)))) as { __metadata__: object })
        .__metadata__;
    const sft = await writeBatch(
      store,
      'run-io',
      3,
      scored,
      batchConfigSchema.parse({ estimator: 'rejection_sampling' }),
    );
    const bytes = await store.getBytes(sft.samplesKey);
    assert.equal((header(bytes) as { objective?: string }).objective, 'sft');
    assert.deepEqual(
      readBatchFile(bytes).map((r) => [r.rollout_id, r.advantage]),
      [
        ['g0-r0', 1],
        ['g1-r1', 1],
      ],
    );
    const rl = await writeBatch(store, 'run-io', 4, scored, batchConfigSchema.parse({}));
    assert.equal('objective' in header(await store.getBytes(rl.samplesKey)), false);
  });

  void it('reads spans in seq order, and loads reward evidence with agent-posted rewards', async () => {
    const ref = scored[0]!.result.ref;
    const seqs: number[] = [];
    for await (const span of storeSpanSource(store)(ref)) seqs.push(span.seq);
    assert.deepEqual(seqs, [0, 1, 2]);
    const ev = await loadEvidence(store, scored[0]!.result, { workdir: null });
    assert.deepEqual(ev.agentRewards, [{ name: 'tests', value: 0.3 }, { value: 0.9 }]);
    assert.equal(ev.lastAssistantMessage, 'turn 2');
    assert.equal(ev.turns, 3);
    assert.equal(ev.completionTokens, 15);
    const none = await loadEvidence(store, scored[1]!.result, { workdir: null });
    assert.deepEqual(none.agentRewards, []);
  });
});
