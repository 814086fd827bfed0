import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { FIXTURE_PATH, makeSampleFixture } from '../../scripts/make-sample-fixture.js';

// ajv 8.20.0 (pinned devDependency): the schema is draft 2020-12, which ajv 8 validates natively.
const schema = JSON.parse(await readFile(new URL('../../schemas/sample.schema.json', import.meta.url), 'utf8')) as object;
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

void describe('schemas/fixtures/samples.jsonl', () => {
  void it('is exactly what scripts/make-sample-fixture.ts produces through the batch builder', async () => {
    const committed = await readFile(FIXTURE_PATH, 'utf8');
    assert.equal(committed, await makeSampleFixture(), 'regenerate with: node --import tsx scripts/make-sample-fixture.ts');
    assert.ok(Buffer.byteLength(committed) < 50_000);
  });

  void it('validates against schemas/sample.schema.json line by line and covers the interesting cases', async () => {
    const rows = (await readFile(FIXTURE_PATH, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const [i, row] of rows.entries()) assert.ok(validate(row), `line ${i + 1}: ${JSON.stringify(validate.errors)}`);
    assert.ok(rows.some((r) => (r.loss_mask as number[]).includes(0)), 'a merged multi-turn sample');
    assert.ok(rows.some((r) => r.truncated === true), 'a truncated sample');
    assert.ok(rows.some((r) => (r.advantage as number) > 0) && rows.some((r) => (r.advantage as number) < 0));
  });

  void it('the validator rejects what the schema forbids (so the check above can fail)', () => {
    const good = { sample_id: 's', run_id: 'r', iteration: 0, rollout_id: 'r', attempt: 0, task_id: 't', group_id: 'g', span_ids: ['x'],
      prompt_ids: [1], response_ids: [2], loss_mask: [1], rollout_logprobs: [-0.1], advantage: 0 };
    assert.ok(validate(good));
    assert.equal(validate({ ...good, loss_mask: [2] }), false);
    assert.equal(validate({ ...good, rollout_logprobs: [0.5] }), false);
    assert.equal(validate({ ...good, promptIds: [1] }), false);
  });
});
