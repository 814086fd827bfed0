import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { EXAMPLES_HEADING } from '../../src/apo/bootstrap.js';
import { connectClient } from '../../src/client/connect.js';
import { startPromptOptimization } from '../../src/client/prompt-optimization.js';
import { parseRunConfig } from '../../src/config/run.js';
import { TEMPORAL_BIN } from '../../src/stack/temporal.js';
import { keys } from '../../src/storage/keys.js';
import { createPromptOverlayStore } from '../../src/storage/prompt-overlays.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import type { ApoStatus } from '../../src/workflows/prompt-optimization-types.js';
import { root, startPipelineStack, type PipelineStack } from '../pipeline/harness.js';
import { apoRunConfig, rolloutSpans, systemText, writeApoTasks } from './apo-fixtures.js';
import { rewardsFileSchema } from '../../src/contracts/rewards.js';

const run = promisify(execFile);

// Real Temporal, S3, SmolLM2 server, gateway, worker and calculator agent processes; sizes kept tiny.
describe('promptOptimization end to end', { timeout: 1_800_000 }, () => {
  let stack: PipelineStack;
  let store: ObjectStore;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-apo-'));
  const temporal = (...args: string[]) =>
    run(TEMPORAL_BIN, [...args, '--address', stack.env.VOLT_TEMPORAL_ADDRESS], { cwd: root });
  const failureOf = async (workflowId: string) => {
    const { client, close } = await connectClient(stack.env);
    try {
      const err = await client.workflow
        .getHandle(workflowId)
        .result()
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof WorkflowFailedError, String(err));
      return String((err.cause?.cause as Error | undefined)?.message ?? err.cause?.message);
    } finally {
      await close();
    }
  };

  before(async () => {
    stack = await startPipelineStack();
    store = createObjectStore(stack.env);
    await stack.startGateway();
    await stack.startWorker('all');
  });
  after(async () => stack?.stop());

  it('a raw config from the Temporal CLI fails at once, naming the bad fields, and a config without apo names apo', async () => {
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ runId: 'apo-bad', apo: { beamWidth: 0 }, tasks: { trainFile: 'x' } }));
    await temporal(
      'workflow',
      'start',
      '--type',
      'promptOptimization',
      '--task-queue',
      'volt-cpu',
      '--workflow-id',
      'apo-bad',
      '--input-file',
      bad,
    );
    const message = await failureOf('apo-bad');
    for (const field of ['apo.beamWidth', 'agent', 'tasks.evalFile', 'reward'])
      assert.match(message, new RegExp(field.replace('.', '\\.')));

    const noApo = path.join(dir, 'no-apo.json');
    const { apo: _dropped, ...config } = apoRunConfig('apo-missing', writeApoTasks(2, 2, 'small-sums'), { rounds: 1 });
    writeFileSync(noApo, JSON.stringify(config));
    await temporal(
      'workflow',
      'start',
      '--type',
      'promptOptimization',
      '--task-queue',
      'volt-cpu',
      '--workflow-id',
      'apo-missing',
      '--input-file',
      noApo,
    );
    assert.match(await failureOf('apo-missing'), /^apo: required/);
  });

  it("bootstrap: proposes worked examples from successful rollouts, applies them to the agent's calls, promotes by the rule", async () => {
    const runId = 'apo-bootstrap';
    const apo = {
      rounds: 1,
      beamWidth: 1,
      branchFactor: 1,
      trainBatchSize: 3,
      validationBatchSize: 2,
      validationTasks: 3,
      strategies: ['bootstrap' as const],
      bootstrap: { demonstrations: 2, minReward: 1 },
    };
    const config = parseRunConfig(apoRunConfig(runId, writeApoTasks(3, 3, 'small-sums'), apo));
    const { client, close } = await connectClient(stack.env);
    let result: ApoStatus;
    try {
      result = (await (await startPromptOptimization(client, config)).handle.result()) as ApoStatus;
    } finally {
      await close();
    }
    assert.equal(result.phase, 'done');
    assert.equal(result.history.length, 1);
    const round = result.history[0]!;
    assert.deepEqual(round.parents, [0]);
    assert.equal(round.trainRollouts, 3);
    assert.deepEqual(round.children, [1], 'one child proposed from the successful training rollouts');

    // The child is stored, derived from the agent's own prompt, and carries worked examples.
    const overlays = await createPromptOverlayStore(store).list(runId);
    assert.deepEqual(
      overlays.map((o) => [o.version, o.origin.strategy, o.origin.parents, o.origin.round]),
      [[1, 'bootstrap', [0], 1]],
    );
    assert.ok(overlays[0]!.template.includes(EXAMPLES_HEADING));

    // Its validation rollouts ran through the overlay: the agent sent its own prompt, upstream got the examples.
    const childSpans = await rolloutSpans(store, runId, 1, 'r1-val-v1-t0');
    assert.ok(childSpans.length > 0);
    for (const span of childSpans) {
      assert.deepEqual(span.promptOverlay, { version: 1 });
      assert.ok(
        systemText(span.upstreamRequest).includes(EXAMPLES_HEADING),
        'upstream system message holds the examples',
      );
      assert.ok(
        !systemText(span.request.body).includes(EXAMPLES_HEADING),
        "the agent's recorded request is as it sent it",
      );
    }
    for (const span of await rolloutSpans(store, runId, 1, 'r1-val-v0-t0')) assert.equal(span.promptOverlay, null);

    // Scores, beam and best are consistent, and promotion followed the rule.
    assert.deepEqual(round.candidates.map((c) => c.version).sort(), [0, 1]);
    assert.deepEqual(round.beam, [round.candidates[0]!.version]);
    assert.equal(
      result.baselineScore,
      (await store.getJson(keys.evaluation(runId, 0, 'full-v0'), rewardsFileSchema)).meanReward,
    );
    const best = result.best!;
    const shouldPromote = best.version !== 0 && best.score > result.baselineScore! + config.apo!.promoteMargin;
    assert.equal(result.promotion?.promoted, shouldPromote, result.promotion?.reason);
    const active = await createPromptOverlayStore(store).getActive(runId);
    assert.equal(active?.version ?? 0, shouldPromote ? best.version : 0);
    assert.equal(result.heldOut.afterVersion, active?.version ?? 0);
    assert.equal(typeof result.heldOut.before, 'number');
    if (!shouldPromote) assert.equal(result.heldOut.after, result.heldOut.before);

    // `volt run-status` shows the run (the `status` query, answered by the worker).
    const { stdout } = await run(process.execPath, [path.join(root, 'bin/volt.mjs'), 'run-status', runId], {
      cwd: root,
      env: { ...process.env, ...stack.vars },
    });
    assert.match(stdout, new RegExp(`prompt optimisation ${runId}: round 1/1, phase done`));
    assert.match(stdout, /promotion: (promoted|not promoted), active v\d/);

    // The report shows the rounds, the promotion decision and the overlay's text.
    const env = { ...process.env, ...stack.vars };
    const written = await run(
      process.execPath,
      [path.join(root, 'bin/volt.mjs'), 'report', runId, '--out', path.join(dir, 'report')],
      { cwd: root, env },
    );
    assert.deepEqual(written.stdout.trim().split('\n'), [
      path.join(dir, 'report', 'index.html'),
      path.join(dir, 'report', 'curve.png'),
    ]);
    const html = await readFile(path.join(dir, 'report', 'index.html'), 'utf8');
    assert.match(html, /<h1>Volt prompt optimisation apo-bootstrap<\/h1>/);
    assert.match(html, new RegExp(`<th>held-out before \\(v0\\)</th><td>${result.heldOut.before!.toFixed(3)}</td>`));
    assert.match(html, result.promotion!.promoted ? /— ACTIVE/ : /Nothing was promoted/);
    assert.ok(html.includes(EXAMPLES_HEADING), 'the bootstrapped overlay is shown');
  });
});
