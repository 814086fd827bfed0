import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXAMPLES_HEADING } from '../../src/apo/bootstrap.js';
import {
  OptimizerUnavailableError,
  type OptimizerClient,
  type OptimizerMessage,
} from '../../src/apo/optimizer-client.js';
import { MAX_TEMPLATE_CHARS, proposeChildren, type ProposeChildrenInput } from '../../src/apo/propose-children.js';
import { planChildren, type ParentPrompt } from '../../src/apo/proposal.js';
import { digestFromSpans, type RolloutDigest } from '../../src/apo/rollout-digest.js';
import type { PromptOverlay } from '../../src/contracts/prompt-overlay.js';
import { createPromptOverlayStore } from '../../src/storage/prompt-overlays.js';
import { FakeObjectStore } from '../helpers/memory-store.js';
import { CALC_SYSTEM, calcTask, calculatorRollout } from './calculator-spans.js';

const RUN = 'apo-domain';
const tasks = Array.from({ length: 6 }, (_, i) =>
  calcTask(`calc-${i}`, `What is ${i + 2} times ${i + 3}?`, (i + 2) * (i + 3)),
);

/** Digests of one round under the agent's own prompt (v0): tasks 0-3 solved, 4-5 off by one. */
const digests: RolloutDigest[] = tasks.map((task, i) => {
  const answer = Number(task.reference!.answer);
  const ref = { runId: RUN, iteration: 1, rolloutId: `r-${i}`, attempt: 0 };
  const spans = calculatorRollout(ref, task, {
    calc: `${i + 2}*${i + 3}`,
    result: String(answer),
    answer: String(i < 4 ? answer : answer + 1),
  });
  return digestFromSpans(spans, task, { rolloutId: ref.rolloutId, reward: i < 4 ? 1 : 0 });
});

/** FAKE optimiser LLM, in process: answers from a script, checks it was sent a system + user conversation. */
class ScriptedClient implements OptimizerClient {
  readonly calls: OptimizerMessage[][] = [];
  constructor(private readonly answers: (string | Error)[]) {}
  async complete(messages: OptimizerMessage[]): Promise<string | null> {
    assert.equal(messages[0]?.role, 'system', 'the optimiser gets a system message first');
    assert.ok(messages.every((m) => typeof m.content === 'string' && m.content.length > 0));
    this.calls.push(messages);
    const next = this.answers.shift();
    if (next === undefined) throw new Error('FAKE optimiser: no scripted answer left');
    if (next instanceof Error) throw next;
    return next;
  }
}

const v0: ParentPrompt = { version: 0, overlay: null };
const apo = { bootstrap: { demonstrations: 2, minReward: 1 } };

function setup(versions: number[], strategies: ('bootstrap' | 'textual_gradient')[]) {
  const overlays = createPromptOverlayStore(new FakeObjectStore());
  const input = (existing: PromptOverlay[]): ProposeChildrenInput => ({
    runId: RUN,
    seed: 5,
    round: 1,
    apo,
    parents: [v0],
    plans: planChildren([v0], versions, strategies),
    existing,
    digests,
    parentOfRollout: new Map(digests.map((d) => [d.rolloutId, 0])),
  });
  return { overlays, input, save: (o: PromptOverlay) => overlays.put(o) };
}

describe('proposeChildren (domain module, no Temporal): FAKE store and optimiser', () => {
  it('makes a bootstrap and a textual-gradient child, stores each at once, and reports progress', async () => {
    const { overlays, input, save } = setup([2, 3], ['textual_gradient', 'bootstrap']);
    const client = new ScriptedClient([
      'Critique: answers are off by one.',
      '<prompt>Check the product. {{original}}</prompt>',
    ]);
    const progress: number[] = [];
    const result = await proposeChildren(
      input([]),
      { saveOverlay: save, optimizer: { client, failuresPerCritique: 4 } },
      (d) => progress.push(d),
    );
    assert.deepEqual(result.skipped, []);
    assert.deepEqual(
      result.overlays.map((o) => [o.version, o.mode, o.origin.strategy]),
      [
        [2, 'replace', 'textual_gradient'],
        [3, 'append', 'bootstrap'],
      ],
    );
    assert.equal(result.overlays[0]!.template, 'Check the product. {{original}}');
    assert.ok(result.overlays[1]!.template.startsWith(EXAMPLES_HEADING));
    assert.deepEqual(progress, [1, 2]);
    assert.deepEqual(
      (await overlays.list(RUN)).map((o) => o.version),
      [2, 3],
    );
    // The critique saw the agent's own prompt (from the spans) and only the failed rollouts.
    const critique = client.calls[0]![1]!.content;
    assert.ok(critique.includes(`<current_prompt>\n${CALC_SYSTEM}\n</current_prompt>`));
    assert.deepEqual(
      [...critique.matchAll(/^Task: (.*)$/gm)].map((m) => m[1]).sort(),
      tasks
        .slice(4)
        .map((t) => t.input.question)
        .sort(),
    );
  });

  it('after an optimiser outage, a retry returns the stored children as they are and asks only for the missing one', async () => {
    const { overlays, input, save } = setup([2, 3], ['bootstrap', 'textual_gradient']);
    const down = new ScriptedClient([new OptimizerUnavailableError('HTTP 500')]);
    await assert.rejects(
      proposeChildren(input([]), { saveOverlay: save, optimizer: { client: down, failuresPerCritique: 4 } }),
      OptimizerUnavailableError,
    );
    const stored = await overlays.list(RUN);
    assert.deepEqual(
      stored.map((o) => o.version),
      [2],
      'the bootstrap child made before the outage is kept',
    );

    const client = new ScriptedClient(['Critique.', '<prompt>Multiply carefully.</prompt>']);
    const result = await proposeChildren(input(stored), {
      saveOverlay: save,
      optimizer: { client, failuresPerCritique: 4 },
    });
    assert.deepEqual(result.overlays[0], stored[0], 'reused unchanged');
    assert.equal(result.overlays[1]!.template, 'Multiply carefully.');
    assert.equal(client.calls.length, 2, 'one critique and one edit, for the missing child only');
  });

  it('skips what a strategy cannot offer: a prompt the run already tried, one too long, no failures to critique', async () => {
    const { input, save } = setup([4, 5], ['textual_gradient']);
    const tried: PromptOverlay = {
      runId: RUN,
      version: 1,
      mode: 'replace',
      template: 'Be exact.',
      origin: { strategy: 'manual', parents: [0], round: null, note: '' },
      createdAt: '2026-01-01T00:00:00Z',
    };
    const client = new ScriptedClient([
      'C1',
      '<prompt>Be exact.</prompt>',
      'C2',
      `<prompt>${'x'.repeat(MAX_TEMPLATE_CHARS + 1)}</prompt>`,
    ]);
    const result = await proposeChildren(input([tried]), {
      saveOverlay: save,
      optimizer: { client, failuresPerCritique: 4 },
    });
    assert.deepEqual(result.overlays, []);
    assert.equal(result.skipped[0]!.reason, 'v4 (textual_gradient from v0): same prompt as v1');
    assert.match(result.skipped[1]!.reason, /^v5 \(textual_gradient from v0\): /);

    const solved = setup([6], ['textual_gradient']);
    const none = await proposeChildren(
      { ...solved.input([]), digests: digests.slice(0, 4) },
      { saveOverlay: solved.save, optimizer: { client: new ScriptedClient([]), failuresPerCritique: 4 } },
    );
    assert.deepEqual(
      none.skipped.map((s) => s.reason),
      ['v6 (textual_gradient from v0): no failed rollouts (reward < 1) to critique'],
    );
  });
});
