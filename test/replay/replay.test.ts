import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadRecordedHistories, replayAll } from './histories.js';

// Histories recorded with VOLT_RECORD_HISTORIES=1 from real runs (crash-run, bad-config: test/pipeline/durability.test.ts)
// and from a real server running the real workflow code with stub activities (xs-run, a run that promotes and scores
// eval.extraSets: test/workflows/eval-extra-sets.test.ts; apo-beam: test/workflows/prompt-optimization.test.ts) must
// replay on the current workflow code: a non-deterministic change to a workflow fails here, before it breaks running
// runs. Re-record them (delete the old files first) when a workflow changes on purpose.
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
