import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Span } from '../../src/contracts/span.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { buildTrajectories, type Trajectory } from '../../src/batches/trajectories.js';
import { toTransition } from '../../src/batches/transitions.js';

const ref = { runId: 'run1', iteration: 0, rolloutId: 'r1', attempt: 0 };

const startsWith = (xs: readonly number[], prefix: readonly number[]) =>
  prefix.length <= xs.length && prefix.every((x, i) => xs[i] === x);

/** Re-derive a sample from its spans: every span's prompt is a prefix of the sample and its completion sits right after it. */
function assertSampleIsSpans(t: Trajectory, byId: Map<string, Span>) {
  const full = [...t.promptIds, ...t.responseIds];
  const p = t.promptIds.length;
  assert.equal(t.responseIds.length, t.lossMask.length);
  assert.equal(t.responseIds.length, t.logprobs.length);
  const trainable = new Set<number>();
  let end = 0;
  t.spanIds.forEach((id, k) => {
    const span = byId.get(id)!;
    const prompt = span.promptTokenIds!;
    const completion = span.choices[0]!.tokenIds!;
    if (k === 0) assert.deepEqual(t.promptIds, prompt, 'sample prompt is the first span prompt');
    assert.ok(startsWith(full, prompt), `span ${id}: prompt is a prefix of the sample`);
    assert.ok(prompt.length >= end, `span ${id}: prompt covers everything before it`);
    assert.deepEqual(
      full.slice(prompt.length, prompt.length + completion.length),
      completion,
      `span ${id}: completion follows its prompt`,
    );
    completion.forEach((_, j) => {
      const i = prompt.length + j - p;
      trainable.add(i);
      assert.equal(t.lossMask[i], 1);
      assert.equal(t.logprobs[i], span.choices[0]!.logprobs![j]);
    });
    end = prompt.length + completion.length;
  });
  assert.equal(full.length, end, 'sample ends with the last completion');
  t.lossMask.forEach((m, i) => {
    if (!trainable.has(i)) {
      assert.equal(m, 0, `position ${i} came from no completion`);
      assert.equal(t.logprobs[i], 0);
    }
  });
}

void describe('buildTrajectories', () => {
  void it('merges a clean multi-turn rollout into one sample with masked context', () => {
    const spans = syntheticRollout(ref, { turns: 3, seed: 1, promptLen: 5, completionLen: 3, gapLen: 2 });
    const out = buildTrajectories(spans);
    assert.equal(out.trajectories.length, 1);
    assert.equal(out.merges, 2);
    const t = out.trajectories[0]!;
    assert.deepEqual(t.lossMask, [1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1]);
    assert.deepEqual(
      t.spanIds,
      spans.map((s) => s.spanId),
    );
    assertSampleIsSpans(t, new Map(spans.map((s) => [s.spanId, s])));
  });

  void it('breaks on a rewritten history, an error span and missing token ids, recording where and why', () => {
    const spans = syntheticRollout(ref, {
      turns: 6,
      seed: 2,
      promptLen: 12,
      rewriteAt: [2],
      errorAt: [4],
      missingIdsAt: [5],
    });
    const out = buildTrajectories(spans);
    assert.deepEqual(
      out.breaks.map((b) => [b.spanId, b.reason, b.position]),
      [
        ['r1-a0-2', 'prefix_mismatch', 1],
        ['r1-a0-4', 'error_span', null],
        ['r1-a0-5', 'missing_token_ids', null],
      ],
    );
    assert.deepEqual(
      out.trajectories.map((t) => t.spanIds.length),
      [2, 2],
    );
    assert.deepEqual(out.excluded, { error_span: 1, missing_token_ids: 1 });
    assert.equal(out.transitions, 4);
    assert.equal(out.merges, 2);
  });

  void it('property: samples hold exactly the engine tokens, and merge never joins calls whose prefix differs', () => {
    const turns = fc.integer({ min: 1, max: 8 });
    const idx = fc.uniqueArray(fc.integer({ min: 0, max: 7 }), { maxLength: 3 });
    fc.assert(
      fc.property(
        turns,
        idx,
        idx,
        idx,
        fc.integer(),
        fc.integer({ min: 2, max: 50 }),
        (n, rewriteAt, errorAt, missingIdsAt, seed, vocab) => {
          // A tiny vocabulary makes accidental equal prefixes common, which must then (and only then) merge.
          const spans = syntheticRollout(ref, {
            turns: n,
            seed,
            promptLen: 9,
            completionLen: 3,
            gapLen: 2,
            rewriteAt,
            errorAt,
            missingIdsAt,
            vocab,
          });
          const byId = new Map(spans.map((s) => [s.spanId, s]));
          const out = buildTrajectories(spans);
          for (const t of out.trajectories) {
            assertSampleIsSpans(t, byId);
            for (let k = 1; k < t.spanIds.length; k++) {
              const a = byId.get(t.spanIds[k - 1]!)!;
              const b = byId.get(t.spanIds[k]!)!;
              assert.ok(
                startsWith(b.promptTokenIds!, [...a.promptTokenIds!, ...a.choices[0]!.tokenIds!]),
                'merged only on exact prefix',
              );
            }
          }
          for (const br of out.breaks.filter((b) => b.reason === 'prefix_mismatch')) {
            const i = spans.findIndex((s) => s.spanId === br.spanId);
            const prev = spans[i - 1]!;
            const held = [...prev.promptTokenIds!, ...prev.choices[0]!.tokenIds!];
            const prompt = spans[i]!.promptTokenIds!;
            const pos = br.position!;
            assert.ok(!startsWith(prompt, held), 'a break only where the prefix really differs');
            assert.deepEqual(prompt.slice(0, pos), held.slice(0, pos), 'equal before the reported position');
            assert.ok(pos === prompt.length || prompt[pos] !== held[pos], 'different at the reported position');
          }
          const used = out.trajectories.flatMap((t) => t.spanIds);
          const usable = spans.filter((s) => s.status === 'ok' && s.promptTokenIds !== null).map((s) => s.spanId);
          assert.deepEqual(used, usable, 'every usable span in exactly one sample, in order');
          assert.equal(out.transitions, usable.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});

void describe('toTransition', () => {
  void it('treats unusable engine token data as missing, so no invalid sample reaches the trainer', () => {
    const [span] = syntheticRollout(ref, { turns: 1, seed: 3 });
    const withChoice = (tokenIds: number[] | null, logprobs: number[] | null): Span => ({
      ...span!,
      choices: [{ ...span!.choices[0]!, tokenIds, logprobs }],
    });
    assert.equal(typeof toTransition(span!), 'object');
    assert.equal(toTransition(withChoice([1, 2], [-0.1])), 'missing_token_ids', 'length mismatch');
    assert.equal(toTransition(withChoice([1, 2], [-0.1, NaN])), 'missing_token_ids');
    assert.equal(toTransition(withChoice([1, 2], [-0.1, 0.2])), 'missing_token_ids');
    assert.equal(toTransition(withChoice([1, -2], [-0.1, -0.2])), 'missing_token_ids');
    assert.equal(toTransition({ ...span!, promptTokenIds: [] }), 'missing_token_ids');
    assert.equal(toTransition({ ...span!, status: 'error' }), 'error_span');
  });
});
