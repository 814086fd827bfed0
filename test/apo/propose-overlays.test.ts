import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import {
  createPromptProposalActivities,
  type ProposeOverlaysInput,
  type ProposeOverlaysResult,
} from '../../src/activities/prompt-proposals.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { OptimizerUnavailableError } from '../../src/apo/optimizer-client.js';
import { EXAMPLES_HEADING } from '../../src/apo/bootstrap.js';
import { parseRunConfig, type RunConfigInput } from '../../src/config/run.js';
import { FailureType } from '../../src/contracts/failures.js';
import type { PromptOverlay } from '../../src/contracts/prompt-overlay.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { createPromptOverlayStore } from '../../src/storage/prompt-overlays.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { CALC_SYSTEM, calcTask, calculatorRollout } from './calculator-spans.js';
import { startScriptedOptimizer, type ScriptedOptimizer } from './scripted-optimizer.js';
import { callRecordLine } from '../helpers/stored-spans.js';

const KEY_ENV = 'VOLT_TEST_APO_PROPOSER_KEY';
const tasks = Array.from({ length: 8 }, (_, i) =>
  calcTask(`calc-${i}`, `What is ${i + 2} times ${i + 3}?`, (i + 2) * (i + 3)),
);

/** The pinned train set (before() stores it), as validateRunConfig would have filled it in. */
let trainSet = '';

function config(runId: string, baseUrl: string, apo: Record<string, unknown> = {}) {
  const raw: RunConfigInput = {
    runId,
    seed: 5,
    agent: { command: ['node', 'agent.ts'] },
    tasks: { trainFile: 'train.jsonl', evalFile: 'train.jsonl', trainSet, evalSet: trainSet },
    reward: { kind: 'numeric_match' },
    apo: {
      strategies: ['textual_gradient', 'bootstrap'],
      branchFactor: 2,
      bootstrap: { demonstrations: 2 },
      optimizer: { baseUrl, model: 'critic', apiKeyEnv: KEY_ENV },
      ...apo,
    },
  };
  return parseRunConfig(raw);
}

describe('proposeOverlays on a real S3 server, with the scripted FAKE optimiser', () => {
  let services: TestServices;
  let store: ObjectStore;
  let fake: ScriptedOptimizer;
  let dir: string;
  let activities: ReturnType<typeof createPromptProposalActivities>;
  const heartbeats: unknown[] = [];
  // The expected "Activity failed" warnings of the outage case would bury the test output.
  const run = (input: ProposeOverlaysInput): Promise<ProposeOverlaysResult> => {
    const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    return env.run(activities.proposeOverlays, input);
  };

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-apo-proposers' });
    await store.ensureBucket();
    dir = mkdtempSync(path.join(os.tmpdir(), 'volt-apo-'));
    writeFileSync(path.join(dir, 'train.jsonl'), tasks.map((t) => JSON.stringify(t)).join('\n'));
    const taskSets = new PinnedTaskSets(store, dir);
    trainSet = (await taskSets.pinFile('train.jsonl')).sha256;
    activities = createPromptProposalActivities({ store, taskSets });
    fake = await startScriptedOptimizer([], { apiKey: 'sk-apo' });
    process.env[KEY_ENV] = 'sk-apo';
  });
  after(async () => {
    delete process.env[KEY_ENV];
    await fake?.close();
    await services?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Rollouts of round 1: v0 solves tasks 0-3 and fails 4-5, v1 solves 0-1 and fails 2-5; spans go to the store. */
  async function writeRollouts(runId: string): Promise<ProposeOverlaysInput['rollouts']> {
    const rollouts: ProposeOverlaysInput['rollouts'] = [];
    for (const [parentVersion, solved] of [
      [0, 4],
      [1, 2],
    ] as const) {
      for (let i = 0; i < 6; i++) {
        const task = tasks[i]!;
        const answer = Number(task.reference!.answer);
        const ref = { runId, iteration: 1, rolloutId: `r1-v${parentVersion}-t${i}`, attempt: 0 };
        const spans = calculatorRollout(ref, task, {
          calc: `${i + 2}*${i + 3}`,
          result: String(answer),
          answer: String(i < solved ? answer : answer + 1),
        });
        for (const s of spans) await store.putBytes(keys.span(ref, s.seq), Buffer.from(callRecordLine(s)));
        rollouts.push({ ref, taskId: task.id, reward: i < solved ? 1 : 0, parentVersion });
      }
    }
    return rollouts;
  }

  async function parentOverlay(runId: string): Promise<PromptOverlay> {
    return createPromptOverlayStore(store).put({
      runId,
      version: 1,
      mode: 'replace',
      template: 'Be exact.\n{{original}}',
      origin: { strategy: 'seed', parents: [0], round: null, note: 'seed' },
      createdAt: '2026-01-01T00:00:00Z',
    });
  }

  it('stores children at the given versions, resumes after an optimiser outage, and a re-run reuses them without the optimiser', async () => {
    const runId = 'apo-proposers';
    const seed = await parentOverlay(runId);
    const input: ProposeOverlaysInput = {
      config: config(runId, fake.baseUrl),
      round: 1,
      parents: [
        { version: 0, overlay: null },
        { version: 1, overlay: seed },
      ],
      rollouts: await writeRollouts(runId),
      versions: [2, 3, 4, 5],
    };
    fake.enqueue('Critique A: answers are off by one.', '<prompt>Double-check the product. {{original}}</prompt>', {
      status: 500,
    });
    await assert.rejects(
      run(input),
      (e: unknown) => e instanceof OptimizerUnavailableError && /HTTP 500/.test(e.message),
    );
    assert.deepEqual(
      (await createPromptOverlayStore(store).list(runId)).map((o) => o.version),
      [1, 2, 3, 5],
      'children made before the outage are stored',
    );

    fake.enqueue('Critique B: no checking.', '<prompt>Multiply carefully, then answer.</prompt>');
    const before = fake.requests.length;
    const result = await run(input);
    assert.equal(fake.requests.length - before, 2, 'only the missing child asks the optimiser');
    assert.deepEqual(result.skipped, []);
    assert.deepEqual(heartbeats.at(-1), { done: 4, total: 4 }, 'progress is heartbeated as children are made');
    const byVersion = new Map(result.overlays.map((o) => [o.version, o]));
    assert.deepEqual([...byVersion.keys()], [2, 3, 4, 5]);
    assert.deepEqual(byVersion.get(2)!.origin, {
      strategy: 'textual_gradient',
      parents: [0],
      round: 1,
      note: 'critique of 2 failed rollouts: Critique A: answers are off by one.',
    });
    assert.deepEqual(
      [byVersion.get(2)!.mode, byVersion.get(2)!.template],
      ['replace', 'Double-check the product. {{original}}'],
    );
    assert.deepEqual(
      [byVersion.get(4)!.mode, byVersion.get(4)!.template],
      ['replace', 'Multiply carefully, then answer.'],
    );
    assert.equal(byVersion.get(3)!.mode, 'append');
    assert.ok(byVersion.get(3)!.template.startsWith(EXAMPLES_HEADING));
    assert.equal(byVersion.get(5)!.mode, 'replace');
    assert.ok(byVersion.get(5)!.template.startsWith(`Be exact.\n{{original}}\n\n${EXAMPLES_HEADING}`));
    for (const v of [3, 5]) assert.deepEqual(byVersion.get(v)!.origin.parents, [v === 3 ? 0 : 1]);

    // Each critique saw its parent's rendered prompt and that parent's own failures only.
    const shown = (content: string) => [...content.matchAll(/^Task: (.*)$/gm)].map((m) => m[1]).sort();
    const questions = (from: number, to: number) =>
      tasks
        .slice(from, to)
        .map((t) => t.input.question)
        .sort();
    const v2Critique = fake.requests[0]!.messages[1]!.content;
    assert.ok(v2Critique.includes(`<current_prompt>\n${CALC_SYSTEM}\n</current_prompt>`));
    assert.deepEqual(shown(v2Critique), questions(4, 6));
    const v4Critique = fake.requests.at(-2)!.messages[1]!.content;
    assert.ok(v4Critique.includes(`<current_prompt>\nBe exact.\n${CALC_SYSTEM}\n</current_prompt>`));
    assert.deepEqual(shown(v4Critique), questions(2, 6));

    const again = await run(input);
    assert.deepEqual(again, result);
    assert.equal(fake.requests.length - before, 2, 'a re-run never calls the optimiser');
    assert.deepEqual(await createPromptOverlayStore(store).get(runId, 4), byVersion.get(4));
  });

  it('skips children a strategy cannot offer and fails non-retryably, writing nothing, without the key variable', async () => {
    const runId = 'apo-proposers-skip';
    const rollouts = (await writeRollouts(runId)).map((r) => ({ ...r, reward: 0 }));
    const bootstrapOnly = config(runId, fake.baseUrl, { strategies: ['bootstrap'] });
    const result = await run({
      config: bootstrapOnly,
      round: 2,
      parents: [{ version: 0, overlay: null }],
      rollouts: rollouts.slice(0, 6),
      versions: [7, 8],
    });
    assert.deepEqual(result.overlays, []);
    assert.deepEqual(
      result.skipped.map((s) => s.reason),
      [
        'v7 (bootstrap from v0): no successful rollouts (reward >= 1)',
        'v8 (bootstrap from v0): no successful rollouts (reward >= 1)',
      ],
    );

    delete process.env[KEY_ENV];
    try {
      const before = fake.requests.length;
      await assert.rejects(
        run({
          config: config(runId, fake.baseUrl),
          round: 2,
          parents: [{ version: 0, overlay: null }],
          rollouts,
          versions: [9, 10],
        }),
        (e: unknown) =>
          e instanceof ApplicationFailure &&
          e.nonRetryable &&
          e.type === FailureType.InvalidConfig &&
          e.message.includes(KEY_ENV),
      );
      assert.equal(fake.requests.length, before);
      assert.deepEqual(await createPromptOverlayStore(store).list(runId), []);
    } finally {
      process.env[KEY_ENV] = 'sk-apo';
    }
  });
  it('skips a child that renders the same as a stored version, so no validation rollouts go to a known prompt', async () => {
    const runId = 'apo-proposers-dup';
    await parentOverlay(runId);
    const rollouts = await writeRollouts(runId);
    fake.enqueue('Critique: be exact.', '<prompt>Be exact.\n{{original}}</prompt>');
    const tgOnly = config(runId, fake.baseUrl, { strategies: ['textual_gradient'], branchFactor: 1 });
    const result = await run({
      config: tgOnly,
      round: 1,
      parents: [{ version: 0, overlay: null }],
      rollouts: rollouts.slice(0, 6),
      versions: [2],
    });
    assert.deepEqual(result.overlays, []);
    assert.deepEqual(
      result.skipped.map((s) => s.reason),
      ['v2 (textual_gradient from v0): same prompt as v1'],
    );
    assert.equal(await createPromptOverlayStore(store).get(runId, 2), null);
  });
});
