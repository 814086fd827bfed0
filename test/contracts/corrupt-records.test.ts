import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { failureMappingInterceptors, mapActivityFailure } from '../../src/activities/failure-mapping.js';
import { createBatchActivities } from '../../src/activities/batches.js';
import type { ActivityDeps } from '../../src/activities/deps.js';
import { parseRunConfig } from '../../src/config/run.js';
import { batchManifestSchema } from '../../src/contracts/batch-manifest.js';
import { FailureType } from '../../src/contracts/failures.js';
import { dirManifestSchema, modelAliasSchema } from '../../src/contracts/policy.js';
import { agentRewardsFileSchema, rewardsFileSchema } from '../../src/contracts/rewards.js';
import { rolloutOutcomeRecordSchema, rolloutStartedSchema } from '../../src/contracts/rollout-outcome.js';
import { runnerResultSchema } from '../../src/contracts/rollout.js';
import { sampleRowSchema } from '../../src/contracts/sample.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import { CorruptObjectError } from '../../src/storage/errors.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { createPromptOverlayStore } from '../../src/storage/prompt-overlays.js';
import { parseRecord } from '../../src/storage/records.js';
import { readSpans } from '../../src/storage/spans.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { asStored, callRecordLine } from '../helpers/stored-spans.js';
import type { Span } from '../../src/contracts/span.js';

const RUN = 'corrupt-run';
const ref = { runId: RUN, iteration: 0, rolloutId: 'g0-r0', attempt: 0 };
const at = '2026-01-01T00:00:00.000Z';
const result = {
  ref,
  taskId: 't1',
  groupId: 'g0',
  mode: 'train',
  outcome: 'succeeded',
  exitCode: 0,
  signal: null,
  durationMs: 5,
  outputText: null,
  stdoutKey: keys.rolloutLog(ref, 'stdout'),
  stderrKey: keys.rolloutLog(ref, 'stderr'),
  detail: null,
  workdir: null,
  sandbox: 'bubblewrap',
};
const outcome = {
  rolloutId: 'g0-r0',
  taskId: 't1',
  groupId: 'g0',
  final: result,
  attempts: [{ attempt: 0, outcome: 'succeeded', detail: null }],
  snapshots: {},
};
const rewards = {
  mode: 'train',
  label: 'train',
  meanReward: 1,
  scored: 1,
  infraFailed: 0,
  rollouts: [
    {
      rolloutId: 'g0-r0',
      attempt: 0,
      taskId: 't1',
      taskKind: null,
      groupId: 'g0',
      outcome: 'succeeded',
      reward: 1,
      parts: {},
      flags: [],
      error: null,
    },
  ],
};
const policy = {
  name: 'adapter-1',
  checkpointKey: keys.checkpoint('a'.repeat(64)),
  sha256: 'a'.repeat(64),
  iteration: 0,
};
const alias = {
  alias: 'best',
  servedAs: `${RUN}-best`,
  current: { policy, score: 0.5, iteration: 0, at },
  history: [],
};
const stats = { count: 1, mean: 1, std: 0, min: 1, max: 1 };
const manifest = {
  config: {},
  counts: {
    rollouts: 1,
    groups: 1,
    groupsUsed: 1,
    rolloutsUsed: 1,
    spans: 1,
    transitions: 1,
    merges: 0,
    samples: 1,
    truncated: 0,
    rolloutsWithoutSamples: 0,
  },
  tokens: { prompt: 3, response: 2, trainable: 2 },
  mergeRate: null,
  lossScale: 1,
  reward: stats,
  advantage: stats,
  drops: { rollouts: {}, groups: {}, spans: {}, samples: {} },
  breaks: [],
  lineage: { s1: 'x' },
};
const overlay = {
  runId: RUN,
  version: 1,
  mode: 'prepend',
  template: 'Be brief.',
  origin: { strategy: 'manual', parents: [0], round: null, note: 'test' },
  createdAt: at,
};
const active = {
  runId: RUN,
  version: 1,
  score: 0.5,
  promotedAt: at,
  history: [{ version: 1, score: 0.5, promotedAt: at }],
};
const span = syntheticRollout(ref, { turns: 1, seed: 1 })[0]!;
const sample = {
  sample_id: 's',
  run_id: RUN,
  iteration: 0,
  rollout_id: 'g0-r0',
  attempt: 0,
  task_id: 't1',
  group_id: 'g0',
  span_ids: ['x'],
  prompt_ids: [1, 2],
  response_ids: [3],
  loss_mask: [1],
  rollout_logprobs: [-0.5],
  advantage: 1,
  reward: 1,
  truncated: false,
};

/** Set one field (a dotted path) of a deep copy to a wrong value. */
function corrupt<T>(value: T, path: string, bad: unknown): T {
  const copy = structuredClone(value) as Record<string, unknown>;
  const parts = path.split('.');
  let node: Record<string, unknown> = copy;
  for (const p of parts.slice(0, -1)) node = node[p] as Record<string, unknown>;
  node[parts.at(-1)!] = bad;
  return copy as T;
}

void describe('stored records are contracts: a corrupt or foreign record is a typed failure naming the key and the field', () => {
  let services: TestServices;
  let store: ObjectStore;
  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-contracts-test' });
    await store.ensureBucket();
  });
  after(async () => services?.stop());

  const overlays = () => createPromptOverlayStore(store);
  // name, key, valid record, a field to break and its bad value, and the storage reader the system uses for it.
  const cases: {
    name: string;
    key: string;
    valid: unknown;
    field: string;
    bad: unknown;
    read: (key: string) => Promise<unknown>;
    /** How the system stores it, when not as JSON of the record itself. */
    write?: (key: string, value: unknown) => Promise<unknown>;
  }[] = [
    {
      name: 'rollout outcome',
      key: keys.rolloutOutcome(RUN, 0, 'g0-r0'),
      valid: outcome,
      field: 'final.outcome',
      bad: 'exploded',
      read: (k) => store.getJson(k, rolloutOutcomeRecordSchema),
    },
    {
      name: 'rollout result',
      key: keys.rolloutResult(ref),
      valid: result,
      field: 'ref.attempt',
      bad: -1,
      read: (k) => store.getJson(k, runnerResultSchema),
    },
    {
      name: 'rollout started marker',
      key: keys.rolloutStarted(ref),
      valid: { startedAt: at, policy: 'base' },
      field: 'policy',
      bad: 7,
      read: (k) => store.getJson(k, rolloutStartedSchema),
    },
    {
      name: 'rewards file',
      key: keys.rewards(RUN, 0),
      valid: rewards,
      field: 'rollouts.0.reward',
      bad: 'high',
      read: (k) => store.getJson(k, rewardsFileSchema),
    },
    {
      name: 'evaluation rewards file',
      key: keys.evaluation(RUN, 0, 'base'),
      valid: rewards,
      field: 'meanReward',
      bad: null,
      read: (k) => store.getJsonOrNull(k, rewardsFileSchema),
    },
    {
      name: 'agent rewards',
      key: keys.agentRewards(ref),
      valid: { rewards: [{ value: 1, name: null, at }] },
      field: 'rewards.0.value',
      bad: '1',
      read: (k) => store.getJson(k, agentRewardsFileSchema),
    },
    {
      name: 'model alias',
      key: keys.modelAlias(RUN, 'best'),
      valid: alias,
      field: 'current.policy.sha256',
      bad: 'not-a-sha',
      read: (k) => store.getJsonOrNull(k, modelAliasSchema),
    },
    {
      name: 'checkpoint manifest',
      key: keys.checkpointManifest('b'.repeat(64)),
      valid: { sha256: 'b'.repeat(64), files: [] },
      field: 'files',
      bad: {},
      read: (k) => store.getJson(k, dirManifestSchema),
    },
    {
      name: 'batch manifest',
      key: keys.batchManifest(RUN, 0),
      valid: manifest,
      field: 'counts.samples',
      bad: -3,
      read: (k) => store.getJson(k, batchManifestSchema),
    },
    {
      name: 'prompt overlay',
      key: keys.promptOverlay(RUN, 1),
      valid: overlay,
      field: 'origin.strategy',
      bad: 'magic',
      read: () => overlays().get(RUN, 1),
    },
    {
      name: 'active prompt',
      key: keys.activePrompt(RUN),
      valid: active,
      field: 'history.0.version',
      bad: 'one',
      read: () => overlays().getActive(RUN),
    },
    {
      name: 'span',
      key: keys.span(ref, 0),
      valid: asStored(span),
      field: 'seq',
      bad: 'one',
      write: (k, value) => store.putBytes(k, Buffer.from(callRecordLine(value as Span))),
      read: async () => {
        const out = [];
        for await (const s of readSpans(store, ref)) out.push(s);
        return out[0];
      },
    },
  ];

  for (const c of cases) {
    void it(`${c.name}: the valid record reads back; a broken ${c.field} fails naming ${c.key}`, async () => {
      const write = c.write ?? ((k, value) => store.putJson(k, value));
      await write(c.key, c.valid);
      assert.deepEqual(await c.read(c.key), c.valid);
      await write(c.key, corrupt(c.valid, c.field, c.bad));
      const err = await c.read(c.key).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof CorruptObjectError, `expected a CorruptObjectError, got ${String(err)}`);
      assert.equal(err.key, c.key);
      assert.ok(err.message.includes(c.key), err.message);
      assert.ok(err.fields.includes(c.field), `fields ${JSON.stringify(err.fields)} name ${c.field}`);
      const mapped = mapActivityFailure(err);
      assert.ok(mapped instanceof ApplicationFailure);
      assert.equal(mapped.type, FailureType.CorruptRecord);
      assert.equal(mapped.nonRetryable, true);
    });
  }

  void it('a foreign record (another kind at the key) and bytes that are not JSON fail the same way', async () => {
    const key = keys.rolloutOutcome(RUN, 0, 'g0-r1');
    await store.putJson(key, rewards);
    await assert.rejects(
      store.getJson(key, rolloutOutcomeRecordSchema),
      (e: unknown) => e instanceof CorruptObjectError && e.fields.includes('final'),
    );
    await store.putBytes(key, Buffer.from('{"rolloutId": "g0-r1", '));
    await assert.rejects(
      store.getJson(key, rolloutOutcomeRecordSchema),
      (e: unknown) => e instanceof CorruptObjectError && /not JSON/.test(e.message),
    );
  });

  void it('a training sample that breaks the shared sample schema names its field', () => {
    assert.deepEqual(parseRecord('sample', sampleRowSchema, sample), sample);
    assert.throws(
      () => parseRecord('sample', sampleRowSchema, corrupt(sample, 'loss_mask', [2])),
      (e: unknown) => e instanceof CorruptObjectError && e.fields.includes('loss_mask.0'),
    );
  });

  void it('a write that breaks its contract is refused before anything is stored', async () => {
    const key = keys.rewards(RUN, 5);
    await assert.rejects(
      store.putJson(key, corrupt(rewards, 'scored', -1) as never, rewardsFileSchema),
      /refusing to write .*scored/,
    );
    assert.equal(await store.stat(key), null);
  });

  void it('an activity that reads a corrupt record fails non-retryably with VoltCorruptRecord', async () => {
    const config = parseRunConfig({
      runId: RUN,
      model: { base: 'base' },
      agent: { command: ['true'] },
      tasks: { trainFile: 't.jsonl', evalFile: 't.jsonl' },
      reward: { kind: 'string_match' },
    });
    await store.putJson(keys.rewards(RUN, 1), corrupt(rewards, 'rollouts.0.outcome', 'exploded'));
    const env = new MockActivityEnvironment(undefined, { interceptors: failureMappingInterceptors });
    const { buildBatch } = createBatchActivities({ store } as ActivityDeps);
    const err = await env.run(buildBatch, { config, iteration: 1, rewardsKey: keys.rewards(RUN, 1) }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, FailureType.CorruptRecord);
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, /rewards\.json: rollouts\.0\.outcome/);
  });
});
