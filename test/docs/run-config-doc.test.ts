import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { renderRunConfigDoc, RUN_CONFIG_DOC } from '../../scripts/make-config-docs.js';
import { runConfigSchema } from '../../src/config/run.js';

void describe('docs/run-config.md (generated from the run config schema)', () => {
  void it('is up to date: regenerate with node --import tsx scripts/make-config-docs.ts', () => {
    assert.equal(readFileSync(RUN_CONFIG_DOC, 'utf8'), renderRunConfigDoc(), 'docs/run-config.md is stale');
  });

  void it('documents every top-level field, with the comments from the schema source', () => {
    const doc = renderRunConfigDoc();
    for (const key of Object.keys(runConfigSchema.shape))
      assert.match(doc, new RegExp(`^\\| \`${key}\` \\|`, 'm'), key);
    assert.match(
      doc,
      /\| `eval.promoteMargin` \| number \| `0` \| ≥ -1, ≤ 1 \| A checkpoint is promoted when its eval score beats the best so far by more than this \(negative: a non-inferiority margin, promoting a candidate at most that much worse\). \|/,
    );
    assert.match(doc, /### `weighted_sum`/);
  });
});
