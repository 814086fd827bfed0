import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildBatch } from '../../src/batches/build-batch.js';
import { batchConfigFor, batchConfigSchema, objectiveOf } from '../../src/batches/config.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { rolloutResult, scoredGroups } from './scored-rollouts.js';
import type { SampleRow } from '../../src/contracts/sample.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';

const spansOf = (ref: RolloutRef) =>
  syntheticRollout(ref, {
    turns: 3,
    seed: ref.rolloutId.length * 7 + ref.rolloutId.charCodeAt(1),
    promptLen: 10,
    completionLen: 4,
    gapLen: 3,
  });

async function collect(build: ReturnType<typeof buildBatch>) {
  const rows: SampleRow[] = [];
  for await (const row of build.samples) rows.push(row);
  return { rows, manifest: build.manifest() };
}

void describe('buildBatch', () => {
  void it('gives every sample of a rollout its advantage and drops small, constant and failed groups', async () => {
    const scored = [
      ...scoredGroups('run1', 3, [[1, 0, 0, 1], [1, 1, 1], [0.5], [1, null, 0]]),
      { result: rolloutResult('run1', 3, 'g0-r9', 'g0', 'infra_failed'), reward: null },
    ];
    const config = batchConfigSchema.parse({ estimator: 'dr_grpo', minGroupSize: 2 });
    const { rows, manifest } = await collect(buildBatch(scored, spansOf, config));
    assert.deepEqual([...new Set(rows.map((r) => r.group_id))], ['g0', 'g3']);
    assert.deepEqual(
      rows.map((r) => [r.rollout_id, r.advantage]),
      [
        ['g0-r0', 0.5],
        ['g0-r1', -0.5],
        ['g0-r2', -0.5],
        ['g0-r3', 0.5],
        ['g3-r0', 0.5],
        ['g3-r2', -0.5],
      ],
    );
    assert.ok(rows.every((r) => r.span_ids.length === 3 && r.loss_mask.length === r.response_ids.length));
    assert.deepEqual(manifest.drops.rollouts, {
      infra_failed: 1,
      zero_variance: 3,
      group_too_small: 1,
      reward_infra_failed: 1,
    });
    assert.deepEqual(manifest.drops.groups, { zero_variance: 1, group_too_small: 1 });
    assert.equal(manifest.counts.groups, 4);
    assert.equal(manifest.counts.groupsUsed, 2);
    assert.equal(manifest.counts.samples, 6);
    assert.equal(manifest.counts.transitions, 18);
    assert.equal(manifest.mergeRate, 1);
    assert.equal(
      manifest.tokens.response,
      rows.reduce((n, r) => n + r.response_ids.length, 0),
    );
    assert.equal(manifest.tokens.trainable, 6 * 12);
    assert.equal(manifest.lineage['g3-r2-a0-1'], 'g3-r2.a0.s0');
    assert.equal(Object.keys(manifest.lineage).length, 18);
    assert.equal(manifest.reward.mean, 0.5);
  });

  void it('counts the zero-variance groups it drops in the loss mean unless lossNormalizer is kept_samples', async () => {
    // 6 kept rollouts (g0, g3), 3 dropped for zero variance (g1); infra failures and small groups count nowhere.
    const scored = [
      ...scoredGroups('run1', 3, [[1, 0, 0, 1], [1, 1, 1], [0.5], [1, null, 0]]),
      { result: rolloutResult('run1', 3, 'g0-r9', 'g0', 'infra_failed'), reward: null },
    ];
    const allGroups = buildBatch(scored, spansOf, batchConfigSchema.parse({}));
    assert.equal(allGroups.lossScale, 6 / 9);
    assert.equal((await collect(allGroups)).manifest.lossScale, 6 / 9);
    const kept = buildBatch(scored, spansOf, batchConfigSchema.parse({ lossNormalizer: 'kept_samples' }));
    assert.equal(kept.lossScale, 1);
    // Without the drop the silent group is in the batch itself: nothing to scale.
    assert.equal(buildBatch(scored, spansOf, batchConfigSchema.parse({ dropZeroVariance: false })).lossScale, 1);
  });

  void it('rejection sampling keeps the rollouts at or above the threshold at advantage 1, whatever their group', async () => {
    const scored = [
      ...scoredGroups('run1', 3, [[1, 0, 0, 1], [1, 1, 1], [0.5], [1, null, 0], [0, 0]]),
      { result: rolloutResult('run1', 3, 'g0-r9', 'g0', 'infra_failed'), reward: null },
    ];
    const config = batchConfigSchema.parse({ estimator: 'rejection_sampling', rejectionThreshold: 0.5 });
    const build = buildBatch(scored, spansOf, config);
    assert.equal(build.lossScale, 1, 'a supervised batch is the mean over its own samples');
    const { rows, manifest } = await collect(build);
    assert.deepEqual(
      rows.map((r) => [r.rollout_id, r.advantage]),
      [
        ['g0-r0', 1],
        ['g0-r3', 1],
        ['g1-r0', 1],
        ['g1-r1', 1],
        ['g1-r2', 1],
        ['g2-r0', 1],
        ['g3-r0', 1],
      ],
    );
    assert.deepEqual(manifest.drops.rollouts, { infra_failed: 1, reward_infra_failed: 1, below_threshold: 5 });
    assert.deepEqual(manifest.drops.groups, {});
    assert.equal(manifest.counts.groupsUsed, 4);
  });

  void it('batch.warmStartIterations: rejection sampling for the first iterations, then the RL estimator', () => {
    const config = batchConfigSchema.parse({ estimator: 'grpo', warmStartIterations: 2 });
    assert.deepEqual(
      [0, 1, 2, 3].map((i) => batchConfigFor(config, i).estimator),
      ['rejection_sampling', 'rejection_sampling', 'grpo', 'grpo'],
    );
    assert.deepEqual(
      [0, 2].map((i) => objectiveOf(batchConfigFor(config, i))),
      ['sft', 'policy_gradient'],
    );
  });

  void it('truncates or drops over-long samples and counts them', async () => {
    const scored = scoredGroups('run1', 0, [[1, 0]]);
    // Each sample: 10 prompt + 3*4 completion + 2*3 gap = 28 tokens.
    const truncated = await collect(buildBatch(scored, spansOf, batchConfigSchema.parse({ maxTokens: 16 })));
    assert.deepEqual(
      truncated.rows.map((r) => [r.prompt_ids.length + r.response_ids.length, r.truncated]),
      [
        [16, true],
        [16, true],
      ],
    );
    assert.equal(truncated.manifest.counts.truncated, 2);
    const dropped = await collect(
      buildBatch(scored, spansOf, batchConfigSchema.parse({ maxTokens: 16, overLength: 'drop' })),
    );
    assert.equal(dropped.rows.length, 0);
    assert.deepEqual(dropped.manifest.drops.samples, { over_max_tokens: 2 });
    assert.equal(dropped.manifest.counts.rolloutsWithoutSamples, 2);
    assert.equal(truncated.manifest.counts.rolloutsWithoutSamples, 0);
    const tooLong = await collect(buildBatch(scored, spansOf, batchConfigSchema.parse({ maxTokens: 10 })));
    assert.deepEqual(tooLong.manifest.drops.samples, { prompt_too_long: 2 });
  });

  void it("keeps, by default, an agent CLI's long turn whole: up to the served model's context of 8192", async () => {
    const scored = scoredGroups('run1', 0, [[1, 0]]);
    // A later turn of a Claude Code rollout: a 6,000-token prompt and a 1,000-token answer.
    const long = (ref: RolloutRef) =>
      syntheticRollout(ref, { turns: 1, seed: 3, promptLen: 6000, completionLen: 1000, gapLen: 0 });
    const { rows, manifest } = await collect(buildBatch(scored, long, batchConfigSchema.parse({})));
    assert.deepEqual(
      rows.map((r) => [r.prompt_ids.length, r.response_ids.length, r.truncated]),
      [
        [6000, 1000, false],
        [6000, 1000, false],
      ],
    );
    assert.deepEqual(manifest.drops.samples, {});
  });

  void it('refuses a manifest before the samples are consumed, and spans listed under the wrong rollout', async () => {
    const scored = scoredGroups('run1', 0, [[1, 0]]);
    assert.throws(() => buildBatch(scored, spansOf, batchConfigSchema.parse({})).manifest(), /before all samples/);
    const wrong = buildBatch(
      scored,
      () => spansOf({ runId: 'run1', iteration: 0, rolloutId: 'other', attempt: 0 }),
      batchConfigSchema.parse({}),
    );
    await assert.rejects(collect(wrong), /belongs to other\/0, listed under g0-r0\/0/);
  });

  void it('leaves the calls of batch.excludeModels out of the samples, counted, and the main calls still merge', async () => {
    const scored = scoredGroups('run1', 0, [[1, 0]]);
    // Three main turns of one conversation, plus a side call (another model, its own prompt) between turns 1 and 2.
    const withSideCall = (ref: RolloutRef) => {
      const main = spansOf(ref).map((s) => ({
        ...s,
        request: { ...s.request, body: { model: 'claude-sonnet-4-5' } },
        requestedModel: 'claude-sonnet-4-5',
        callKind: 'agent_turn' as const,
      }));
      const side = {
        ...main[0]!,
        spanId: `${ref.rolloutId}-side`,
        seq: 1,
        promptTokenIds: [9, 9, 9],
        request: { body: { model: 'claude-haiku-4-5-20251001' }, headers: {} },
        requestedModel: 'claude-haiku-4-5-20251001',
        callKind: 'structured' as const,
      };
      return [main[0]!, side, { ...main[1]!, seq: 2 }, { ...main[2]!, seq: 3 }];
    };
    const plain = await collect(buildBatch(scored, withSideCall, batchConfigSchema.parse({})));
    assert.deepEqual(
      plain.rows.map((r) => r.span_ids.length),
      [1, 1, 2, 1, 1, 2],
      'the side call splits each conversation',
    );
    const config = batchConfigSchema.parse({ excludeModels: ['claude-haiku-*', 'gpt-4o-mini'] });
    const { rows, manifest } = await collect(buildBatch(scored, withSideCall, config));
    assert.deepEqual(
      rows.map((r) => r.span_ids),
      ['g0-r0', 'g0-r1'].map((id) =>
        [0, 1, 2].map((k) => spansOf({ ...scored[0]!.result.ref, rolloutId: id })[k]!.spanId),
      ),
    );
    assert.equal(manifest.drops.spans.excluded_model, 2);
    assert.equal(manifest.counts.spans, 8, 'recorded calls are all counted');
    // a name is matched whole: `*` is the only wildcard, a dot is a dot
    const exact = batchConfigSchema.parse({ excludeModels: ['claude.haiku'] });
    assert.equal(
      (await collect(buildBatch(scored, withSideCall, exact))).manifest.drops.spans.excluded_model,
      undefined,
    );
  });

  void it('leaves the calls of batch.excludeCallKinds out of the samples, counted as excluded_call_kind', async () => {
    const scored = scoredGroups('run1', 0, [[1, 0]]);
    const withTitleCall = (ref: RolloutRef) => {
      const main = spansOf(ref).map((s) => ({ ...s, callKind: 'agent_turn' as const }));
      const title = {
        ...main[0]!,
        spanId: `${ref.rolloutId}-title`,
        seq: 1,
        promptTokenIds: [9, 9],
        callKind: 'text' as const,
      };
      return [main[0]!, title, { ...main[1]!, seq: 2 }, { ...main[2]!, seq: 3 }];
    };
    const config = batchConfigSchema.parse({ excludeCallKinds: ['text', 'structured'] });
    const { rows, manifest } = await collect(buildBatch(scored, withTitleCall, config));
    assert.deepEqual(
      rows.map((r) => r.span_ids),
      ['g0-r0', 'g0-r1'].map((id) =>
        [0, 1, 2].map((k) => spansOf({ ...scored[0]!.result.ref, rolloutId: id })[k]!.spanId),
      ),
    );
    assert.equal(manifest.drops.spans.excluded_call_kind, 2);
    assert.equal(manifest.drops.spans.excluded_model, undefined);
    const bad = batchConfigSchema.safeParse({ excludeCallKinds: ['title'] });
    assert.equal(bad.success, false);
    assert.deepEqual(bad.error!.issues[0]!.path, ['excludeCallKinds', 0]);
  });

  void it("trains only the team's trained roles: a frozen role's calls and unmatched calls are counted, not samples", async () => {
    // A solver and a checker taking turns in one conversation, then a call no role matched.
    const roleAt = ['solver', 'checker', 'solver', null] as const;
    const teamSpans = (ref: RolloutRef) =>
      syntheticRollout(ref, {
        turns: 4,
        seed: ref.rolloutId.charCodeAt(1),
        promptLen: 8,
        completionLen: 3,
        gapLen: 2,
      }).map((s) => ({ ...s, role: roleAt[s.seq]! }));
    const scored = scoredGroups('run1', 1, [[1, 0]]);
    const config = { ...batchConfigSchema.parse({ estimator: 'dr_grpo' }), trainedRoles: ['solver'] };
    const { rows, manifest } = await collect(buildBatch(scored, teamSpans, config));
    // The solver's two calls merge around the checker's (its answer is context in between, loss mask 0).
    assert.deepEqual(
      rows.map((r) => r.span_ids),
      [
        ['g0-r0-a0-0', 'g0-r0-a0-2'],
        ['g0-r1-a0-0', 'g0-r1-a0-2'],
      ],
    );
    assert.equal(manifest.drops.spans.excluded_role, 4);
    assert.equal(manifest.counts.spans, 8);
    // Without a team every call is the policy's.
    const all = await collect(buildBatch(scored, teamSpans, batchConfigSchema.parse({ estimator: 'dr_grpo' })));
    assert.deepEqual(all.rows[0]!.span_ids, ['g0-r0-a0-0', 'g0-r0-a0-1', 'g0-r0-a0-2', 'g0-r0-a0-3']);
    assert.equal(all.manifest.drops.spans.excluded_role, undefined);
  });

  void it('credit per turn: one sample per call, each with its turn advantage against the same turn of the group', async () => {
    const threeTurns = (ref: RolloutRef) =>
      syntheticRollout(ref, { turns: 3, seed: ref.rolloutId.charCodeAt(1), promptLen: 8, completionLen: 3, gapLen: 2 });
    // Equal outcomes (broadcast would drop the group as zero-variance), but r0's first call was rewarded.
    const scored = [
      ...scoredGroups('run1', 1, [[1, 1]]).map((s, i) =>
        i === 0 ? { ...s, turnRewards: [{ span: 0, value: 1 }] } : s,
      ),
    ];
    const config = batchConfigSchema.parse({ estimator: 'dr_grpo', credit: 'per_turn', gamma: 1 });
    const { rows, manifest } = await collect(buildBatch(scored, threeTurns, config));
    assert.ok(rows.every((r) => r.span_ids.length === 1));
    // Returns r0: [2, 1, 1], r1: [1, 1, 1] → turn 0 advantages ±0.5, later turns 0.
    assert.deepEqual(
      rows.map((r) => [r.span_ids[0], r.advantage]),
      [
        ['g0-r0-a0-0', 0.5],
        ['g0-r0-a0-1', 0],
        ['g0-r0-a0-2', 0],
        ['g0-r1-a0-0', -0.5],
        ['g0-r1-a0-1', 0],
        ['g0-r1-a0-2', 0],
      ],
    );
    assert.equal(manifest.mergeRate, 0);
    // Broadcast counts the turn reward into the rollout's return: r0 2, r1 1, every call merged into one sample.
    const broadcast = await collect(buildBatch(scored, threeTurns, batchConfigSchema.parse({ estimator: 'dr_grpo' })));
    assert.deepEqual(
      broadcast.rows.map((r) => [r.span_ids.length, r.advantage, r.reward]),
      [
        [3, 0.5, 2],
        [3, -0.5, 1],
      ],
    );
  });

  void it('rejects a bad batch config naming the field', () => {
    const r = batchConfigSchema.safeParse({ estimator: 'ppo', minGroupSize: 1 });
    assert.equal(r.success, false);
    assert.deepEqual(r.error!.issues.map((i) => i.path.join('.')).sort(), ['estimator', 'minGroupSize']);
  });
});
