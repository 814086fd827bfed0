import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig, type V1Job } from '@kubernetes/client-node';
import { parseRunConfig } from '../../src/config/run.js';
import type { Task } from '../../src/contracts/task.js';
import { registerRolloutSchema, type RegisterRollout } from '../../src/gateway/registry/rollout-registry.js';
import { jobName } from '../../src/rollouts/kube-job.js';
import { KubeRunner } from '../../src/rollouts/kube-runner.js';
import { runRollouts } from '../../src/rollouts/run-rollouts.js';
import { FakeObjectStore } from '../helpers/memory-store.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { playPod } from './play-pod.js';
import { startLogStore, tempDir } from './fixtures.js';

/** FAKE gateway admin API (no agent here calls the model): registrations are checked against the gateway's schema. */
const gateway = {
  register: (input: RegisterRollout) => {
    registerRolloutSchema.parse(input);
    const token = `tok-${input.rolloutId}-${input.attempt}`;
    return Promise.resolve({ token, baseUrl: `http://127.0.0.1:9/r/${token}/v1`, created: true });
  },
  close: () => Promise.resolve({ spans: 0, upstreamFailures: 0, budgetExceeded: null }),
};

// The task's setup builds the repo and the database in the pod; the hidden check only exists after the agent.
const SETUP = [
  '/bin/sh',
  '-c',
  [
    'mkdir tests && echo "assert add(1, 1) == 2" > tests/test_add.py && echo "def add(a, b): return a - b" > calc.py',
    `python3 -c "import sqlite3; c = sqlite3.connect('shop.db'); c.execute('create table orders (id, status)'); c.execute(\\"insert into orders values (1, 'open')\\"); c.commit()"`,
  ].join(' && '),
];
const HONEST = [
  'echo "def add(a, b): return a + b" > calc.py',
  `python3 -c "import sqlite3; c = sqlite3.connect('shop.db'); c.execute(\\"update orders set status = 'shipped'\\"); c.commit()"`,
  'echo done > "$VOLT_OUTPUT_FILE"',
].join(' && ');
const CHEAT = [
  'echo "assert True" > tests/test_add.py',
  'echo "import pytest" > conftest.py',
  `python3 -c "import sqlite3; c = sqlite3.connect('shop.db'); c.execute('delete from orders'); c.commit()"`,
].join(' && ');

const task: Task = {
  id: 'fix-add',
  input: { instructions: 'Fix add, ship order 1.' },
  setup: { command: SETUP },
  hidden: { files: { 'hidden/check.sh': 'grep -q "a + b" calc.py && echo "1 passed"\n' } },
  reference: { expectedRows: { orders: [[1, 'shipped']] } },
};

/**
 * Kubernetes scoring parity with the local runner, against the FAKE Kubernetes API (it validates every Job against
 * the Kubernetes schema and the restricted Pod Security profile): the task's setup, the protected-file hashes, the
 * guards and sqlite_state run in the pod (played for real in bwrap by the FAKE kubelet of play-pod.ts), through the
 * same runRollouts and reward code as local rollouts.
 */
void describe('KubeRunner scoring parity: task setup, sqlite_state, protected files and guards in the pod', () => {
  const fake = new FakeKubeApi();
  let s3: Awaited<ReturnType<typeof startLogStore>>;
  let runner: KubeRunner;
  let dir: string;

  before(async () => {
    const server = await fake.start();
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server, skipTLSVerify: true }],
      users: [{ name: 'volt', token: fake.token }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'volt' }],
      currentContext: 'fake',
    });
    s3 = await startLogStore();
    runner = new KubeRunner(
      kc,
      { image: 'registry.invalid/agent:1', pollIntervalMs: 20, createsPerSecond: 1000, createBurst: 100 },
      s3.sink,
    );
    dir = await tempDir('kube-parity');
  });
  after(async () => {
    await fake.stop();
    await s3.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const config = (script: string) =>
    parseRunConfig({
      runId: 'kube-parity',
      tasks: { trainFile: 'unused.jsonl', evalFile: 'unused.jsonl' },
      agent: { command: ['/bin/sh', '-c', script] },
      rollouts: { runner: 'kubernetes', kubernetes: { image: 'registry.invalid/agent:1' }, maxAttempts: 1 },
      reward: {
        kind: 'weighted_sum',
        parts: {
          tests: { kind: 'command', command: ['/bin/sh', 'hidden/check.sh'], protectedFiles: ['tests/**'] },
          db: {
            kind: 'sqlite_state',
            database: 'shop.db',
            queries: { orders: 'SELECT id, status FROM orders ORDER BY id' },
          },
          guards: { kind: 'guards', protectedFiles: ['tests/**'] },
        },
      },
    });

  /** Runs one rollout; the FAKE kubelet plays its pod once the Job exists and reports it to the FAKE API. */
  async function rollout(rolloutId: string, script: string, play: (job: V1Job, name: string) => Promise<void>) {
    const store = new FakeObjectStore();
    const running = runRollouts(
      {
        config: config(script),
        iteration: 0,
        mode: 'train',
        policy: { name: 'base', checkpointKey: null, sha256: null, iteration: null },
        sampling: null,
        promptOverlay: null,
        tasks: new Map([[task.id, task]]),
        jobs: [{ taskId: task.id, groupId: 'g0', rolloutId }],
      },
      { store, gateway, runner, python: '/host/only/python', env: {} },
      { signal: new AbortController().signal },
    );
    const name = jobName({ runId: 'kube-parity', iteration: 0, rolloutId, attempt: 0 });
    for (let i = 0; i < 1000 && !fake.jobs.has(name); i++) await sleep(10);
    const job = fake.jobs.get(name)!;
    await play(job, name);
    return { record: (await running).get(rolloutId)!, job };
  }

  const played = async (job: V1Job, name: string) => {
    const { logs, failed } = await playPod(job, dir);
    assert.equal(failed, null, JSON.stringify(logs));
    fake.finishScored(name, logs.agent ?? '', logs.score ?? '');
  };

  void it('an honest agent: setup ran in the pod, the check and the queries ran there, no flags', async () => {
    const { record, job } = await rollout('honest', HONEST, played);
    const pod = job.spec!.template.spec!;
    assert.deepEqual(
      pod.initContainers?.map((c) => c.name),
      ['prepare', 'agent'],
    );
    assert.ok(
      !pod.initContainers![1]!.volumeMounts!.some((m) => m.name === 'snap'),
      'the agent never mounts the hash listing',
    );
    assert.equal(record.final.outcome, 'succeeded', record.final.detail ?? '');
    const scores = record.workdirScores!;
    assert.deepEqual(scores.tests, { value: 1, parts: { command: 1 }, flags: [] });
    assert.deepEqual(scores.db, { value: 1, parts: { sqlite_state: 1 }, flags: [] });
    assert.deepEqual(scores.guards, { value: 0, parts: {}, flags: [] });
    // The hashes before the agent came from the pod, after the setup: the protected test is in them.
    assert.deepEqual(Object.keys(record.snapshots.tests?.files ?? {}), ['tests/test_add.py']);
  });

  void it('a cheating agent: tampered tests score the tamper penalty, conftest.py and the edit are flagged, the wiped table mismatches', async () => {
    const { record } = await rollout('cheat', CHEAT, played);
    assert.equal(record.final.outcome, 'succeeded', record.final.detail ?? '');
    const scores = record.workdirScores!;
    assert.deepEqual(scores.tests, { value: -1, parts: { command: -1 }, flags: ['tampered:tests/test_add.py'] });
    assert.deepEqual(scores.db, { value: 0, parts: { sqlite_state: 0 }, flags: ['mismatch:orders'] });
    assert.deepEqual('flags' in scores.guards! ? [...scores.guards.flags].sort() : scores.guards, [
      'guard:conftest:conftest.py',
      'guard:tampered:tests/test_add.py',
    ]);
    // The pod's workspace really was changed by the agent (the FAKE kubelet ran it), so the flags are not made up.
    assert.equal(
      await readFile(
        path.join(
          dir,
          jobName({ runId: 'kube-parity', iteration: 0, rolloutId: 'cheat', attempt: 0 }),
          'workspace',
          'conftest.py',
        ),
        'utf8',
      ),
      'import pytest\n',
    );
  });

  void it('a task setup that fails in the pod is infra_failed with its output, and nothing is scored', async () => {
    const { record } = await rollout('broken-setup', HONEST, async (_job, name) =>
      fake.failPrepare(name, 1, 'volt: task setup failed with 2\nmkdir: cannot create directory'),
    );
    assert.equal(record.final.outcome, 'infra_failed');
    assert.match(record.final.detail ?? '', /prepare step \(task setup\) exited with 1: .*task setup failed with 2/s);
    assert.equal(record.workdirScores, undefined);
  });
});
