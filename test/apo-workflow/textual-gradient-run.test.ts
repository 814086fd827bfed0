import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../../src/client/connect.js';
import { queryApoStatus, startPromptOptimization } from '../../src/client/prompt-optimization.js';
import { pauseRun, resumeRun } from '../../src/client/runs.js';
import { parseRunConfig } from '../../src/config/run.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { createPromptOverlayStore } from '../../src/storage/prompt-overlays.js';
import type { ApoStatus } from '../../src/workflows/prompt-optimization-types.js';
import { startScriptedOptimizer, type ScriptedOptimizer } from '../apo/scripted-optimizer.js';
import { startPipelineStack, type PipelineStack } from '../pipeline/harness.js';
import { apoRunConfig, rolloutSpans, systemText, writeApoTasks } from './apo-fixtures.js';

// A harmful edit (answers are words, never the <answer> tag) and a sane one that keeps the agent's prompt and adds
// a worked example of the validation tasks' kind.
const HARMFUL = 'Never calculate. Reply to every message with the single word banana and nothing else.';
const SANE =
  '{{original}}\nExample: for "What is 12 + 7?" write <calc>12+7</calc>, read the result, then write <answer>19</answer>.';

async function firstKey(store: ObjectStore, prefix: string): Promise<string | null> {
  for await (const o of store.list(prefix)) return o.key;
  return null;
}

// Real Temporal, S3, SmolLM2 server, gateway, worker and calculator agent; the optimiser LLM is a scripted FAKE.
describe('promptOptimization with textual gradients from a scripted FAKE optimiser', { timeout: 1_800_000 }, () => {
  let stack: PipelineStack;
  let optimizer: ScriptedOptimizer;
  before(async () => {
    // Children are proposed one after the other: a critique call, then an edit call, per child.
    optimizer = await startScriptedOptimizer([
      'The prompt is too long.',
      `<prompt>${HARMFUL}</prompt>`,
      'The prompt lacks a worked example of the task.',
      `<prompt>${SANE}</prompt>`,
    ]);
    stack = await startPipelineStack();
    await stack.startGateway();
    await stack.startWorker('all');
  });
  after(async () => {
    await stack?.stop();
    await optimizer?.close();
  });

  it("pauses between batches; keeps the better candidate, never promotes the harmful one, and the edits reach the agent's calls", async () => {
    const runId = 'apo-textual';
    const apo = {
      rounds: 1,
      beamWidth: 1,
      branchFactor: 2,
      trainBatchSize: 3,
      validationBatchSize: 3,
      validationTasks: 3,
      strategies: ['textual_gradient' as const],
      optimizer: { baseUrl: optimizer.baseUrl, model: 'fake-optimizer', temperature: 0 },
    };
    const config = parseRunConfig(apoRunConfig(runId, writeApoTasks(3, 3, 'word-problems'), apo));
    const { client, close } = await connectClient(stack.env);
    let result: ApoStatus;
    try {
      const { handle } = await startPromptOptimization(client, config);
      // Paused right away: the held-out batch already launched finishes, then nothing starts until resume.
      await pauseRun(client, runId);
      let s = await queryApoStatus(client, runId);
      for (
        const t0 = Date.now();
        !(s.paused && s.heldOut.before !== null) && Date.now() - t0 < 600_000;
        await sleep(500)
      )
        s = await queryApoStatus(client, runId);
      assert.equal(s.phase, 'paused');
      await sleep(3000);
      const started = await firstKey(createObjectStore(stack.env), keys.rolloutAttempts(runId, 0, 'full-v0-t0'));
      assert.equal(started, null, 'no validation rollout starts while paused');
      await resumeRun(client, runId);
      result = (await handle.result()) as ApoStatus;
    } finally {
      await close();
    }
    const round = result.history[0]!;
    assert.deepEqual(round.children, [1, 2], `both edits became children (skipped: ${round.skipped.join('; ')})`);
    assert.equal(optimizer.requests.length, 4);
    for (const r of optimizer.requests) assert.equal(r.model, 'fake-optimizer');
    assert.match(String(optimizer.requests[0]!.messages.at(-1)!.content), /failed these \d+ tasks/);

    const store = createObjectStore(stack.env);
    const overlays = await createPromptOverlayStore(store).list(runId);
    assert.deepEqual(
      overlays.map((o) => [o.version, o.origin.strategy, o.mode, o.template]),
      [
        [1, 'textual_gradient', 'replace', HARMFUL],
        [2, 'textual_gradient', 'replace', SANE],
      ],
    );

    // The edits reach the agent's calls: the upstream system message is the edited prompt, {{original}} rendered.
    const harmful = await rolloutSpans(store, runId, 1, 'r1-val-v1-t0');
    const sane = await rolloutSpans(store, runId, 1, 'r1-val-v2-t0');
    assert.ok(harmful.length > 0 && sane.length > 0);
    for (const span of harmful) assert.equal(systemText(span.upstreamRequest), HARMFUL);
    for (const span of sane) {
      const agentPrompt = systemText(span.request.body);
      assert.ok(agentPrompt.length > 0);
      assert.equal(systemText(span.upstreamRequest), SANE.replace('{{original}}', agentPrompt));
    }

    // The search ranks the sane edit above the harmful one; the harmful one is neither kept nor promoted.
    const score = (v: number) => round.candidates.find((c) => c.version === v)!.score;
    assert.ok(score(2) > score(1), `sane ${score(2)} > harmful ${score(1)}`);
    assert.notDeepEqual(round.beam, [1]);
    assert.notEqual(result.best?.version, 1);
    const active = await createPromptOverlayStore(store).getActive(runId);
    assert.notEqual(active?.version, 1);
    // Promotion follows the rule: the sane edit is promoted exactly when it beats the agent's own prompt.
    const best = result.best!;
    assert.equal(result.promotion!.promoted, best.version === 2 && best.score > result.baselineScore!);
    assert.equal(active?.version ?? 0, result.promotion!.promoted ? 2 : 0);
  });
});
