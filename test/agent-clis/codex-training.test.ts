import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { parseRunConfig } from '../../src/config/run.js';
import type { Span } from '../../src/contracts/span.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { keys } from '../../src/storage/keys.js';
import { spanObjectText } from '../../src/storage/span-compression.js';
import { spanOfStoredLine } from '../../src/storage/spans.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { root, startPipelineStack, type PipelineStack } from '../pipeline/harness.js';
import { missing } from './harness.js';

// examples/agent-clis/coding-codex.json through one real training iteration: the real Codex CLI on the coding tasks
// in sandboxed rollouts, hidden-test rewards, a batch from its Responses spans, a LoRA update and an evaluation.
// Only the sizes are cut (2 tasks × 2 rollouts, 2 evaluation tasks); what the 135M model achieves is not judged. A
// loaded 2-core machine can take minutes per Codex call: the example's 600 s agent timeout and a 45 min test limit.
describe(
  'one training iteration of the coding tasks driven by Codex',
  {
    // ~4 min on the quiet 2-core machine, ~17 min on loaded cores (minutes per Codex call): opt in, not part of `make test`.
    skip:
      process.env.VOLT_SLOW_TESTS === '1'
        ? missing(path.join(root, 'node_modules/.bin/codex'))
        : 'slow end-to-end run: set VOLT_SLOW_TESTS=1 to run it',
    timeout: 2_700_000,
  },
  () => {
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

    it('rollouts → rewards → a batch of Codex spans → an update → an evaluation', async (t) => {
      const example = JSON.parse(readFileSync(path.join(root, 'examples/agent-clis/coding-codex.json'), 'utf8'));
      const config = parseRunConfig({
        ...example,
        runId: 'coding-codex-test',
        agent: { ...example.agent, command: ['node', path.join(root, 'examples/agent-clis/codex.mjs')] },
        tasks: {
          trainFile: path.join(root, example.tasks.trainFile),
          evalFile: path.join(root, example.tasks.evalFile),
        },
        rollouts: { ...example.rollouts, tasksPerIteration: 2 },
        eval: { ...example.eval, tasks: 2 },
      });
      const { client, close } = await connectClient(stack.env);
      let status: RunStatus;
      try {
        const { handle } = await startTrainingRun(client, config);
        status = await handle.result();
      } finally {
        await close();
      }
      const store = createObjectStore(stack.env);
      const spans: Span[] = [];
      for await (const o of store.list(keys.iteration(config.runId, 0))) {
        if (!o.key.includes('/spans/')) continue;
        for (const line of spanObjectText(await store.getBytes(o.key)).split('\n'))
          if (line) spans.push(spanOfStoredLine(line) as Span);
      }
      const train = spans.filter((s) => s.mode === 'train');
      const it0 = status.history[0]!;
      t.diagnostic(
        `base eval ${JSON.stringify(status.baseEval)}; iteration 0: ${JSON.stringify({ ...it0, trainMetrics: undefined, timeline: it0.timeline.seconds })}`,
      );
      t.diagnostic(`${train.length} train spans, ${train.filter((s) => s.status !== 'ok').length} with an error`);
      assert.equal(status.phase, 'done', JSON.stringify(it0));
      assert.equal(it0.rollouts, 4);
      assert.equal(it0.infraFailed, 0);
      assert.ok(train.length >= 4, 'every rollout made a call');
      for (const s of train) {
        assert.equal(s.api, 'responses');
        // No call was refused or failed by the gateway or the engine; a call cut short by the agent's timeout (the
        // runner stops the agent, which hangs up) is recorded as `client disconnected`, with no HTTP status.
        if (s.status !== 'ok') assert.deepEqual(s.error, { status: null, message: 'client disconnected' });
        else assert.ok(s.choices[0]!.tokenIds!.length > 0);
      }
      assert.ok(train.some((s) => s.status === 'ok'));
      assert.ok(it0.samples > 0, 'the batch has samples built from the Codex spans');
      assert.ok(it0.candidate?.sha256, 'the update produced an adapter');
      assert.ok(it0.eval !== null || it0.evalError !== null, 'the candidate was evaluated');
    });
  },
);
