import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadRecordedHistories, replayAll } from './histories.js';

// Histories recorded from real runs (test/pipeline/durability.test.ts with VOLT_RECORD_HISTORIES=1; promptOptimization
// from test/workflows/prompt-optimization.test.ts, a real server running the real workflow code with stub activities;
// word-demo-s1b-eval-base: a real base evaluation with eval.extraSets, `temporal workflow show --output json` of a demo run)
// must replay on the current workflow code: a non-deterministic change to a workflow fails here, before it breaks
// running runs.
describe('workflow replay', () => {
  it('replays every recorded history with the current workflow code', async () => {
    const histories = loadRecordedHistories();
    assert.ok(histories.length >= 4, `expected recorded histories in test/replay/histories, found ${histories.length}`);
    const types = new Set(
      histories.map(
        (h) =>
          (
            h.history as {
              events?: { workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }[];
            }
          ).events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name,
      ),
    );
    for (const t of ['trainingRun', 'trainingIteration', 'evaluation', 'promptOptimization'])
      assert.ok(types.has(t), `a ${t} history is recorded`);
    await replayAll(histories);
  });
});
