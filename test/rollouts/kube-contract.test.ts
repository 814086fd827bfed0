import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig, type V1Job } from '@kubernetes/client-node';
import { parseRunConfig } from '../../src/config/run.js';
import type { RunnerResult } from '../../src/contracts/rollout.js';
import type { Task } from '../../src/contracts/task.js';
import { registerRolloutSchema, type RegisterRollout } from '../../src/gateway/registry/rollout-registry.js';
import { scoreRollout } from '../../src/rewards/registry.js';
import { jobName } from '../../src/rollouts/kube-job.js';
import { KubeRunner } from '../../src/rollouts/kube-runner.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { runRollouts } from '../../src/rollouts/run-rollouts.js';
import type { RolloutSpecInput } from '../../src/rollouts/spec.js';
import { FakeObjectStore } from '../helpers/memory-store.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { playPod } from './play-pod.js';
import { specFor, startLogStore, tempDir } from './fixtures.js';

/** FAKE gateway admin API (no agent here calls the model): registrations are checked against the gateway's schema. */
const gateway = {
  register: (input: RegisterRollout) => {
    registerRolloutSchema.parse(input);
    const token = `tok-${input.rolloutId}-${input.attempt}`;
    return Promise.resolve({ token, baseUrl: `http://127.0.0.1:9/r/${token}/v1`, created: true });
  },
  close: () => Promise.resolve({ spans: 0, upstreamFailures: 0, budgetExceeded: null }),
};

/** The image's ENV lines: the worker's environment on the local runner, so both runners see the same variables. */
const IMAGE_ENV = { LANG: 'C.UTF-8', IMAGE_SECRET: 'not-for-the-agent', PYTHONPATH: '/opt/image' };

/**
 * The Kubernetes runner keeps the local runner's contract (docs/agent-contract.md), against the FAKE Kubernetes API
 * (it validates every Job against the Kubernetes schema): each pod is played for real by the FAKE kubelet of
 * play-pod.ts, its containers in bwrap with the pod's env, volumes and commands and its Job's deadline, and the same
 * attempt runs on the local runner beside it. The output file, the environment, HOME and the outcome must match.
 */
void describe('KubeRunner keeps the local runner contract: output file, env, HOME, outcomes', () => {
  const fake = new FakeKubeApi();
  let s3: Awaited<ReturnType<typeof startLogStore>>;
  let kube: KubeRunner;
  let local: LocalRunner;
  let dir: string;
  let localHome: string;

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
    kube = new KubeRunner(
      kc,
      { image: 'registry.invalid/agent:1', pollIntervalMs: 20, createsPerSecond: 1000, createBurst: 100 },
      s3.sink,
    );
    dir = await tempDir('kube-contract');
    localHome = path.join(dir, 'local-home');
    await mkdir(localHome);
    local = new LocalRunner({
      root: path.join(dir, 'local'),
      logs: s3.sink,
      killGraceMs: 1000,
      pidsCgroup: null,
      parentEnv: { ...IMAGE_ENV, PATH: '/usr/local/bin:/usr/bin:/bin', HOME: localHome },
    });
  });
  after(async () => {
    await fake.stop();
    await s3.stop();
    await local.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Waits for the attempt's Job, plays its pod and reports it to the FAKE API. */
  async function play(name: string): Promise<V1Job> {
    for (let i = 0; i < 1000 && !fake.jobs.has(name); i++) await sleep(10);
    const job = fake.jobs.get(name);
    assert.ok(job, `Job ${name} was never created`);
    const played = await playPod(job, dir, IMAGE_ENV);
    fake.finishPlayed(name, played.containers, played.deadlineExceeded);
    return job;
  }

  /** The same attempt on both runners (the local one unsandboxed, as the pod is the sandbox on Kubernetes). */
  async function both(id: string, script: string, over: Partial<RolloutSpecInput> = {}) {
    const spec = specFor(['/bin/sh', '-c', script], {
      ref: { runId: 'contract', iteration: 0, rolloutId: id, attempt: 0 },
      ...over,
    });
    const [onKube, job] = await Promise.all([kube.run(spec, new AbortController().signal), play(jobName(spec.ref))]);
    const onLocal = await local.run({ ...spec, sandbox: 'none' }, new AbortController().signal);
    return { onKube, onLocal, job, podDir: path.join(dir, jobName(spec.ref)) };
  }

  const outcome = (r: RunnerResult) => ({
    outcome: r.outcome,
    exitCode: r.exitCode,
    signal: r.signal,
    detail: r.detail,
    outputText: r.outputText,
  });

  void it("the README's reward (numeric_match on the output file) scores the pod's answer as on the local runner", async () => {
    const task: Task = { id: 'add', input: { question: '2 + 2' }, reference: { answer: 4 } };
    const config = parseRunConfig({
      runId: 'kube-contract',
      tasks: { trainFile: 'unused.jsonl', evalFile: 'unused.jsonl' },
      agent: { command: ['/bin/sh', '-c', 'echo "thinking..." && printf "4\\n" > "$VOLT_OUTPUT_FILE"'] },
      rollouts: { runner: 'kubernetes', kubernetes: { image: 'registry.invalid/agent:1' }, maxAttempts: 1 },
      reward: { kind: 'numeric_match', source: 'output_file' },
    });
    const running = runRollouts(
      {
        config,
        iteration: 0,
        mode: 'train',
        policy: { name: 'base', checkpointKey: null, sha256: null, iteration: null },
        sampling: null,
        promptOverlay: null,
        tasks: new Map([[task.id, task]]),
        jobs: [{ taskId: task.id, groupId: 'g0', rolloutId: 'calc' }],
      },
      { store: new FakeObjectStore(), gateway, runner: kube, python: 'python3', env: {} },
      { signal: new AbortController().signal },
    );
    const job = await play(jobName({ runId: 'kube-contract', iteration: 0, rolloutId: 'calc', attempt: 0 }));
    const record = (await running).get('calc')!;
    assert.equal(record.final.outcome, 'succeeded', record.final.detail ?? '');
    assert.equal(record.final.outputText, '4\n');
    const evidence = {
      result: record.final,
      lastAssistantMessage: null,
      workdir: null,
      agentRewards: [],
      completionTokens: 0,
      turns: 0,
      snapshots: {},
    };
    const reward = await scoreRollout(config.reward, task, evidence, { python: 'python3', env: {} });
    assert.equal(typeof reward === 'number' ? reward : reward.value, 1);
    const agent = [...(job.spec!.template.spec!.initContainers ?? []), ...job.spec!.template.spec!.containers].find(
      (c) => c.name === 'agent',
    );
    assert.ok(
      agent?.env?.some((e) => e.name === 'VOLT_OUTPUT_FILE'),
      'every rollout pod sets VOLT_OUTPUT_FILE',
    );
  });

  void it('an empty output file is an empty answer and a missing one none, as on the local runner', async () => {
    const empty = await both('empty-output', ': > "$VOLT_OUTPUT_FILE"');
    assert.equal(empty.onLocal.outputText, '');
    assert.deepEqual(outcome(empty.onKube), outcome(empty.onLocal));
    const none = await both('no-output', 'true');
    assert.equal(none.onLocal.outputText, null);
    assert.deepEqual(outcome(none.onKube), outcome(none.onLocal));
  });

  void it("the agent's env is the allow-list of the image's env plus the contract; HOME is a writable dir of its own", async () => {
    const script = [
      'env > "$HOME/seen-env"',
      'mkdir -p "$HOME/.config/agent" && echo kept > "$HOME/.config/agent/state"',
      'cp "$HOME/seen-env" "$VOLT_OUTPUT_FILE"',
    ].join(' && ');
    const { onKube, onLocal, podDir } = await both('env', script, { envAllowList: ['PATH', 'LANG', 'HOME'] });
    assert.equal(onKube.outcome, 'succeeded', onKube.detail ?? '');
    assert.equal(onLocal.outcome, 'succeeded', onLocal.detail ?? '');
    const names = (text: string | null) =>
      (text ?? '')
        .split('\n')
        .map((l) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(l)?.[1])
        .filter((n): n is string => n !== undefined)
        .sort();
    // The shell itself exports PWD on both runners; nothing of the image's or the cluster's own env gets through.
    assert.deepEqual(names(onKube.outputText), names(onLocal.outputText));
    assert.deepEqual(names(onKube.outputText), [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'HOME',
      'LANG',
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      'PATH',
      'PWD',
      'VOLT_OUTPUT_FILE',
      'VOLT_TASK',
      'VOLT_TASK_FILE',
    ]);
    const home = /^HOME=(.*)$/m.exec(onKube.outputText ?? '')?.[1];
    assert.ok(home && !home.startsWith('/workspace'), `HOME ${home} is not the workdir`);
    // The pod's HOME volume holds what the agent wrote there; the workdir (which the guards list) does not.
    const kept = await Promise.all(
      (await readdir(podDir)).map((v) =>
        readFile(path.join(podDir, v, '.config/agent/state'), 'utf8').catch(() => null),
      ),
    );
    assert.deepEqual(kept.filter(Boolean), ['kept\n'], 'HOME is one writable volume of the pod');
    assert.deepEqual(await readdir(path.join(podDir, 'workspace')), []);
  });

  void it('exit codes, signals and timeouts map to the same outcomes, the output file kept on a timeout', async () => {
    const failed = await both('exit3', 'echo 7 > "$VOLT_OUTPUT_FILE"; exit 3');
    assert.equal(failed.onLocal.outcome, 'agent_failed');
    assert.deepEqual(outcome(failed.onKube), outcome(failed.onLocal));
    const killed = await both('killed', 'echo 7 > "$VOLT_OUTPUT_FILE"; kill -KILL $$');
    assert.equal(killed.onLocal.signal, 'SIGKILL');
    assert.deepEqual(outcome(killed.onKube), outcome(killed.onLocal));
    const slow = await both('slow', 'echo 42 > "$VOLT_OUTPUT_FILE"; sleep 30', { timeoutMs: 1000 });
    assert.equal(slow.onLocal.outcome, 'timed_out');
    assert.equal(slow.onLocal.outputText, '42\n');
    assert.deepEqual(outcome(slow.onKube), outcome(slow.onLocal));
  });
});
