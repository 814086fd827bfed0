import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { FIXTURE_PATH, makeSampleFixture } from '../../scripts/make-sample-fixture.js';
import { readBatchFile } from '../../src/batches/batch-file.js';

// ajv 8.20.0 (pinned devDependency): the schema is draft 2020-12, which ajv 8 validates natively.
const schema = JSON.parse(
  await readFile(new URL('../../schemas/sample.schema.json', import.meta.url), 'utf8'),
) as object;
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

void describe('schemas/fixtures/samples.safetensors', () => {
  void it('is exactly what scripts/make-sample-fixture.ts produces through the batch builder', async () => {
    const committed = await readFile(FIXTURE_PATH);
    assert.ok(
      committed.equals(await makeSampleFixture()),
      'regenerate with: node --import tsx scripts/make-sample-fixture.ts',
    );
    assert.ok(committed.length < 50_000);
  });

  void it('decodes to rows that validate against schemas/sample.schema.json and cover the interesting cases', async () => {
    const rows = readBatchFile(await readFile(FIXTURE_PATH));
    assert.equal(rows.length, 7);
    for (const [i, row] of rows.entries()) assert.ok(validate(row), `sample ${i}: ${JSON.stringify(validate.errors)}`);
    assert.ok(
      rows.some((r) => r.loss_mask.includes(0)),
      'a merged multi-turn sample',
    );
    assert.ok(
      rows.some((r) => r.truncated),
      'a truncated sample',
    );
    assert.ok(rows.some((r) => r.advantage > 0) && rows.some((r) => r.advantage < 0));
    assert.deepEqual(
      rows.filter((r) => r.rollout_id === 'r-0-2').map((r) => r.span_ids),
      [['r-0-2-a0-0', 'r-0-2-a0-1'], ['r-0-2-a0-2']],
    );
    assert.ok(!rows.some((r) => r.rollout_id === 'r-0-3'), 'the infra-failed rollout is excluded');
  });

  void it('the validator rejects what the schema forbids (so the check above can fail)', () => {
    const good = {
      sample_id: 's',
      run_id: 'r',
      iteration: 0,
      rollout_id: 'r',
      attempt: 0,
      task_id: 't',
      group_id: 'g',
      span_ids: ['x'],
      prompt_ids: [1],
      response_ids: [2],
      loss_mask: [1],
      rollout_logprobs: [-0.1],
      advantage: 0,
    };
    assert.ok(validate(good));
    assert.equal(validate({ ...good, loss_mask: [2] }), false);
    assert.equal(validate({ ...good, rollout_logprobs: [0.5] }), false);
    assert.equal(validate({ ...good, promptIds: [1] }), false);
  });
});
