import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseRunConfig } from '../../src/config/run.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { iterationSpans, root, startPipelineStack, tinyRunConfig, trainToEnd, type PipelineStack } from './harness.js';

// The Responses API calculator agent, unchanged, through one real iteration: its spans -> samples -> an update.
describe('trainingRun with the Responses API agent (tiny settings)', { timeout: 1_500_000 }, () => {
  let stack: PipelineStack;
  let worker: ChildProcess;
  before(async () => {
    stack = await startPipelineStack();
    await stack.startGateway();
    worker = await stack.startWorker('all');
  });
  after(async () => {
    worker?.kill('SIGKILL');
    await stack?.stop();
  });

  it('trains on spans recorded from /v1/responses like on chat spans', async () => {
    const base = tinyRunConfig('responses-run');
    const config = parseRunConfig({
      ...base,
      agent: {
        ...base.agent,
        command: [path.join(root, 'node_modules/.bin/tsx'), path.join(root, 'examples/calculator-responses/agent.ts')],
        env: { AGENT_MAX_TURNS: '3', AGENT_MAX_TOKENS: '24' },
      },
      // The Responses API has no stop strings, so every turn runs to max_output_tokens and a group of two wrong
      // answers scores the same; keep such groups (advantage 0) so the batch is never empty by chance.
      batch: { minGroupSize: 2, dropZeroVariance: false },
      // What is under test is spans -> samples -> update; evaluation is the same for every API (training-run.test.ts).
      eval: { ...base.eval, everyIterations: 0 },
    });
    const status = await trainToEnd(stack.env, config);
    const store = createObjectStore(stack.env);
    const spans = await iterationSpans(stack.env, 'responses-run', 0);
    const train = spans.filter((s) => s.mode === 'train');
    const failed = train.filter((s) => s.status !== 'ok');
    // Said on failure: a model server too slow for the agent's 120 s timeout shows up as error spans, not as a mystery.
    const seen = `${train.length} train spans, ${failed.length} failed${failed[0] ? ` (first: ${failed[0].error?.message})` : ''}; history ${JSON.stringify(status.history[0])}`;
    assert.equal(status.phase, 'done', seen);
    const it0 = status.history[0]!;
    assert.equal(it0.rollouts, 4);
    assert.ok(train.length >= 4, `every rollout made model calls: ${seen}`);
    for (const s of train) {
      assert.equal(s.api, 'responses');
      assert.equal(s.endpoint, 'chat.completions');
    }
    assert.ok(it0.samples > 0, `the batch has samples built from the Responses spans: ${seen}`);
    assert.ok(it0.candidate?.sha256, 'the update produced a content-addressed adapter');
    assert.ok(train.some((s) => s.status === 'ok' && s.choices[0]!.tokenIds!.length > 0));
    const manifest = await store.getJson(keys.batchManifest('responses-run', 0));
    assert.ok(
      JSON.stringify(manifest).includes(train[0]!.rolloutId),
      'the batch manifest ties samples back to the rollouts',
    );
  });
});
