import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { parseRunConfig, type RunConfigInput } from '../../src/config/run.js';
import { rolloutOutcomeRecordSchema, type RolloutOutcomeRecord } from '../../src/contracts/rollout-outcome.js';
import type { Task } from '../../src/contracts/task.js';
import { registerRolloutSchema, type RegisterRollout } from '../../src/gateway/registry/rollout-registry.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { priorOutcomes, type RolloutJob } from '../../src/rollouts/rollout-records.js';
import { runRollouts, type RunRolloutsDeps, type RunRolloutsInput } from '../../src/rollouts/run-rollouts.js';
import { keys } from '../../src/storage/keys.js';
import { FakeObjectStore } from '../helpers/memory-store.js';
import { tempDir } from './fixtures.js';

const RUN = 'run-domain';
const policy = { name: 'base', checkpointKey: null, sha256: null, iteration: null };
const tasks = new Map<string, Task>([
  ['t0', { id: 't0', input: { write: false } }],
  ['t1', { id: 't1', input: { write: true } }],
]);

/**
 * FAKE gateway admin API: no gateway runs in a unit test. It checks each registration against the gateway's own
 * schema and answers close with the model-side failures the test scripts for a token.
 */
class FakeGatewayAdmin {
  readonly registered: RegisterRollout[] = [];
  readonly closed: string[] = [];
  readonly upstreamFailures = new Map<string, number>();

  async register(input: RegisterRollout) {
    this.registered.push(registerRolloutSchema.parse(input));
    const token = `tok-${input.rolloutId}-${input.attempt}`;
    return { token, baseUrl: `http://127.0.0.1:9/r/${token}/v1`, created: true };
  }

  async close(token: string) {
    this.closed.push(token);
    return { spans: 0, upstreamFailures: this.upstreamFailures.get(token) ?? 0, budgetExceeded: null };
  }
}

const configWith = (over: Partial<RunConfigInput> = {}) =>
  parseRunConfig({
    runId: RUN,
    tasks: { trainFile: 'unused.jsonl', evalFile: 'unused.jsonl' },
    // Answers 42 (output file and answer.txt) for tasks whose input says so, after a pause long enough for slots to overlap.
    agent: {
      command: [
        '/bin/sh',
        '-c',
        'sleep 0.2; case "$VOLT_TASK" in *true*) echo 42 > "$VOLT_OUTPUT_FILE"; echo 42 > answer.txt;; esac',
      ],
    },
    reward: { kind: 'command', command: ['test', '-f', 'answer.txt'] },
    rollouts: { sandbox: 'none', concurrency: 2, maxAttempts: 2 },
    ...over,
  });

describe('runRollouts (domain module, no Temporal): real agent processes, FAKE store and gateway', () => {
  let root: string;
  let runner: LocalRunner;
  const logs = new Map<string, Uint8Array>();
  before(async () => {
    root = await tempDir('run-rollouts');
    runner = new LocalRunner({ root, logs: { put: async (key, bytes) => void logs.set(key, bytes) } });
  });
  after(async () => {
    await runner.close();
    await rm(root, { recursive: true, force: true });
  });

  const setup = (over: Partial<RunRolloutsInput> = {}) => {
    const store = new FakeObjectStore();
    const gateway = new FakeGatewayAdmin();
    const deps: RunRolloutsDeps = { store, gateway, runner, python: 'python3', env: {} };
    const input: RunRolloutsInput = {
      config: configWith(),
      iteration: 3,
      mode: 'eval',
      policy,
      sampling: { temperature: 0 },
      promptOverlay: { version: 2 },
      tasks,
      jobs: [
        { taskId: 't0', groupId: 'g0', rolloutId: 'r0' },
        { taskId: 't1', groupId: 'g1', rolloutId: 'r1' },
        { taskId: 't1', groupId: 'g1', rolloutId: 'r2' },
      ],
      ...over,
    };
    return { store, gateway, deps, input };
  };

  it('runs every job, registers each attempt as the launch says, stores results and records, reports each record', async () => {
    const { store, gateway, deps, input } = setup();
    const reported: string[] = [];
    const records = await runRollouts(input, deps, {
      signal: new AbortController().signal,
      onRecord: (r) => reported.push(r.rolloutId),
    });
    assert.deepEqual([...records.keys()].sort(), ['r0', 'r1', 'r2']);
    assert.deepEqual(reported.sort(), ['r0', 'r1', 'r2']);
    for (const r of gateway.registered) {
      assert.deepEqual(
        [r.runId, r.iteration, r.attempt, r.mode, r.policyModel, r.sampling, r.promptOverlay],
        [RUN, 3, 0, 'eval', 'base', { temperature: 0 }, { version: 2 }],
      );
    }
    assert.deepEqual(gateway.closed.sort(), ['tok-r0-0', 'tok-r1-0', 'tok-r2-0'], 'every attempt token is closed');
    for (const id of ['r0', 'r1', 'r2']) {
      const ref = { runId: RUN, iteration: 3, rolloutId: id, attempt: 0 };
      assert.ok(store.objects.has(keys.rolloutStarted(ref)), `${id}: started marker`);
      assert.ok(store.objects.has(keys.rolloutResult(ref)), `${id}: result`);
      const record = rolloutOutcomeRecordSchema.parse(store.json(keys.rolloutOutcome(RUN, 3, id)));
      assert.deepEqual(record, records.get(id));
      assert.equal(record.final.outcome, 'succeeded');
      // The command reward read the workdir right after the agent exited: only t1's agents wrote answer.txt.
      const expected =
        id === 'r0'
          ? { value: 0, parts: { command: 0 }, flags: ['exit_code:1'] }
          : { value: 1, parts: { command: 1 }, flags: [] };
      assert.deepEqual(record.workdirScores, { command: expected });
    }
    assert.equal(records.get('r1')!.final.outputText?.trim(), '42');
    assert.equal(records.get('r0')!.final.outputText, null);
  });

  it('never runs more agents at once than rollouts.concurrency', async () => {
    const { deps, input } = setup({
      config: configWith({ rollouts: { sandbox: 'none', concurrency: 1, maxAttempts: 1 } }),
    });
    let running = 0;
    let most = 0;
    const counting: RunRolloutsDeps = {
      ...deps,
      runner: {
        run: async (spec, signal, options) => {
          most = Math.max(most, ++running);
          try {
            return await runner.run(spec, signal, options);
          } finally {
            running--;
          }
        },
      },
    };
    await runRollouts(input, counting, { signal: new AbortController().signal });
    assert.equal(most, 1);
  });

  it('many rollouts waiting on one activity signal raise no MaxListenersExceededWarning', async () => {
    const jobs = Array.from({ length: 16 }, (_, i) => ({ taskId: 't0', groupId: 'g0', rolloutId: `many-${i}` }));
    const { deps, input } = setup({
      config: configWith({ rollouts: { sandbox: 'none', concurrency: 1, maxAttempts: 1 } }),
      jobs,
    });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const records = await runRollouts(input, deps, { signal: new AbortController().signal });
      assert.equal(records.size, 16);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(
      warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
      [],
    );
  });

  it('an attempt whose model calls failed upstream is infra_failed and runs again as the next attempt; a crashed attempt is skipped', async () => {
    const { store, gateway, deps, input } = setup({
      jobs: [
        {
          taskId: 't1',
          groupId: 'g1',
          rolloutId: 'r1',
          earlier: [{ attempt: 0, outcome: 'agent_failed', detail: null }],
        },
      ],
    });
    // Attempt 0 ran before (the rerun's history); a crash left attempt 1 started without a result.
    await store.putJson(keys.rolloutStarted({ runId: RUN, iteration: 3, rolloutId: 'r1', attempt: 1 }), {
      startedAt: 'then',
      policy: 'base',
    });
    gateway.upstreamFailures.set('tok-r1-2', 1);
    const records = await runRollouts(input, deps, { signal: new AbortController().signal });
    const record = records.get('r1')!;
    assert.deepEqual(
      record.attempts.map((a) => [a.attempt, a.outcome]),
      [
        [0, 'agent_failed'],
        [2, 'infra_failed'],
        [3, 'succeeded'],
      ],
    );
    assert.match(record.attempts[1]!.detail ?? '', /1 model call\(s\) failed upstream/);
    assert.equal(record.final.ref.attempt, 3);
    assert.deepEqual(
      gateway.registered.map((r) => r.attempt),
      [2, 3],
    );
  });

  it('an attempt after an infra failure serves the policy again first (a restarted model server lost its adapter)', async () => {
    const adapter = { name: 'run-domain-it2', checkpointKey: 'checkpoints/abc', sha256: 'abc', iteration: 2 };
    const { gateway, deps, input } = setup({
      policy: adapter,
      jobs: [{ taskId: 't1', groupId: 'g1', rolloutId: 'r1' }],
    });
    gateway.upstreamFailures.set('tok-r1-0', 1);
    const events: string[] = [];
    const serving: RunRolloutsDeps = {
      ...deps,
      servePolicy: async (policy) => void events.push(`serve ${policy.name}`),
      gateway: {
        register: async (r) => (events.push(`register ${r.attempt}`), gateway.register(r)),
        close: (t) => gateway.close(t),
      },
    };
    const record = (await runRollouts(input, serving, { signal: new AbortController().signal })).get('r1')!;
    assert.deepEqual(
      record.attempts.map((a) => [a.attempt, a.outcome]),
      [
        [0, 'infra_failed'],
        [1, 'succeeded'],
      ],
    );
    assert.deepEqual(
      events,
      ['register 0', 'serve run-domain-it2', 'register 1'],
      'the first attempt uses what the workflow served; the retry re-serves',
    );
  });

  it("an attempt after an infra failure that was not the model's (a failed task setup) does not wait to re-serve", async () => {
    const adapter = { name: 'run-domain-it2', checkpointKey: 'checkpoints/abc', sha256: 'abc', iteration: 2 };
    const { deps, input } = setup({ policy: adapter, jobs: [{ taskId: 't1', groupId: 'g1', rolloutId: 'r1' }] });
    const events: string[] = [];
    const failingFirst: RunRolloutsDeps = {
      ...deps,
      servePolicy: async (policy) => void events.push(`serve ${policy.name}`),
      // FAKE outcome: the real agent runs, and attempt 0 is reported as a failed task setup (no model call failed).
      runner: {
        run: async (spec, signal, options) => {
          const result = await deps.runner.run(spec, signal, options);
          return spec.ref.attempt === 0
            ? { ...result, outcome: 'infra_failed', detail: 'preparing workdir failed: setup exited 1' }
            : result;
        },
      },
    };
    const record = (await runRollouts(input, failingFirst, { signal: new AbortController().signal })).get('r1')!;
    assert.deepEqual(
      record.attempts.map((a) => [a.attempt, a.outcome]),
      [
        [0, 'infra_failed'],
        [1, 'succeeded'],
      ],
    );
    assert.deepEqual(events, [], 'no model call failed, so the model server is not waited for');
  });

  it('a task missing from the task set fails the launch, after the other jobs have settled', async () => {
    const { store, deps, input } = setup({
      jobs: [
        { taskId: 'nope', groupId: 'g9', rolloutId: 'r9' },
        { taskId: 't1', groupId: 'g1', rolloutId: 'r1' },
      ],
    });
    await assert.rejects(
      runRollouts(input, deps, { signal: new AbortController().signal }),
      /task nope is not in the task set/,
    );
    assert.ok(store.objects.has(keys.rolloutOutcome(RUN, 3, 'r1')), 'the other rollout finished and was recorded');
  });
});

describe('priorOutcomes: what a retried launch reuses', () => {
  const record = (rolloutId: string, attempt: number): RolloutOutcomeRecord => ({
    rolloutId,
    taskId: 't0',
    groupId: 'g0',
    snapshots: {},
    final: {
      ref: { runId: RUN, iteration: 1, rolloutId, attempt },
      taskId: 't0',
      groupId: 'g0',
      sandbox: 'none',
      mode: 'eval',
      outcome: 'succeeded',
      exitCode: 0,
      signal: null,
      durationMs: 1,
      outputText: null,
      stdoutKey: 'a',
      stderrKey: 'b',
      detail: null,
      workdir: null,
    },
    attempts: [{ attempt, outcome: 'succeeded', detail: null }],
  });

  it('reuses stored records, reruns a record still at the rerun attempt (keeping its history), and runs the rest', async () => {
    const store = new FakeObjectStore();
    for (const [id, attempt] of [
      ['done', 0],
      ['rerun-me', 0],
      ['rerun-done', 1],
    ] as const) {
      await store.putJson(keys.rolloutOutcome(RUN, 1, id), record(id, attempt), rolloutOutcomeRecordSchema);
    }
    const jobs: RolloutJob[] = ['done', 'rerun-me', 'rerun-done', 'new'].map((rolloutId) => ({
      taskId: 't0',
      groupId: 'g0',
      rolloutId,
    }));
    const { reused, pending } = await priorOutcomes(store, RUN, 1, jobs, [
      { rolloutId: 'rerun-me', attempt: 0 },
      { rolloutId: 'rerun-done', attempt: 0 },
    ]);
    assert.deepEqual(
      [...reused.keys()],
      ['done', 'rerun-done'],
      'a record past the rerun attempt came from an earlier try of this launch',
    );
    assert.deepEqual(
      pending.map((j) => [j.rolloutId, j.earlier?.map((a) => a.attempt) ?? null]),
      [
        ['rerun-me', [0]],
        ['new', null],
      ],
    );
  });

  it('a corrupt outcome record is a typed failure naming the key, not a rollout to run again', async () => {
    const store = new FakeObjectStore();
    await store.putJson(keys.rolloutOutcome(RUN, 1, 'bad'), { rolloutId: 'bad' });
    await assert.rejects(
      priorOutcomes(store, RUN, 1, [{ taskId: 't0', groupId: 'g0', rolloutId: 'bad' }], []),
      (e: Error) =>
        e.name === 'CorruptObjectError' &&
        e.message.includes(keys.rolloutOutcome(RUN, 1, 'bad')) &&
        /final/.test(e.message),
    );
  });
});
