import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, BatchV1Api, KubeConfig, type V1Job } from '@kubernetes/client-node';
import { jobName } from '../../src/rollouts/kube-job.js';
import { KubeRunner } from '../../src/rollouts/kube-runner.js';
import { runWithRetries } from '../../src/rollouts/retries.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { specFor, startLogStore } from './fixtures.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';

const ref = (rolloutId: string, attempt = 0): RolloutRef => ({ runId: 'Run_1', iteration: 3, rolloutId, attempt });

async function created(fake: FakeKubeApi, name: string): Promise<V1Job> {
  for (let i = 0; i < 500; i++) {
    const job = fake.jobs.get(name);
    if (job) return job;
    await sleep(10);
  }
  throw new Error(`Job ${name} was never created`);
}

void describe('KubeRunner against a fake Kubernetes API', () => {
  const fake = new FakeKubeApi();
  let kc: KubeConfig;
  let s3: Awaited<ReturnType<typeof startLogStore>>;
  let runner: KubeRunner;
  const config = {
    image: 'registry.invalid/agent:1',
    pollIntervalMs: 20,
    createsPerSecond: 1000,
    createBurst: 100,
    maxApiErrors: 3,
  };
  void before(async () => {
    const server = await fake.start();
    kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server, skipTLSVerify: true }],
      users: [{ name: 'volt', token: fake.token }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'volt' }],
      currentContext: 'fake',
    });
    s3 = await startLogStore();
    runner = new KubeRunner(kc, config, s3.sink);
  });
  void after(async () => {
    await fake.stop();
    await s3.stop();
  });

  /** Start a rollout, wait for its Job, apply what the cluster does, and return the result. */
  async function drive(id: string, cluster: (name: string) => void, timeoutMs = 30_000) {
    const spec = specFor(['python', '/agent/main.py'], { ref: ref(id), timeoutMs });
    const running = runner.run(spec, new AbortController().signal);
    const name = jobName(spec.ref);
    await created(fake, name);
    cluster(name);
    return { result: await running, name };
  }

  void it('creates a valid, locked-down Job with only the contract env, and maps completion to succeeded', async () => {
    const { result, name } = await drive('ok', (n) => fake.finish(n, 0, 'agent says hi\n'), 90_500);
    assert.equal(result.outcome, 'succeeded');
    assert.equal(result.exitCode, 0);
    assert.equal((await s3.read(result.stdoutKey)).toString(), 'agent says hi\n');
    const job = fake.jobs.get(name) as V1Job;
    assert.match(name, /^volt-run-1-3-ok-a0-[0-9a-f]{10}$/);
    assert.equal(job.spec?.backoffLimit, 0);
    // The agent's own 91 s run in the pod; the Job's deadline adds the kill grace and the score step's allowance.
    assert.equal(job.spec?.activeDeadlineSeconds, 91 + 5 + 30);
    assert.equal(job.spec?.ttlSecondsAfterFinished, 600);
    assert.deepEqual(job.metadata?.labels?.['volt.dev/run'], 'Run_1');
    const pod = job.spec?.template.spec;
    assert.equal(pod?.automountServiceAccountToken, false);
    assert.equal(pod?.restartPolicy, 'Never');
    const c = pod?.initContainers?.find((i) => i.name === 'agent');
    assert.deepEqual(c?.securityContext?.capabilities?.drop, ['ALL']);
    assert.equal(c?.securityContext?.readOnlyRootFilesystem, true);
    assert.deepEqual(c?.env?.map((e) => e.name).sort(), [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'HOME',
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      'TMPDIR',
      'VOLT_OUTPUT_FILE',
      'VOLT_TASK',
      'VOLT_TASK_FILE',
    ]);
    const value = (name: string) => c?.env?.find((e) => e.name === name)?.value;
    assert.equal(value('ANTHROPIC_API_KEY'), value('OPENAI_API_KEY'));
    assert.equal(value('ANTHROPIC_BASE_URL'), value('OPENAI_BASE_URL')!.replace(/\/v1$/, ''));
    assert.equal(
      job.spec?.template.metadata?.annotations?.['volt.dev/task'],
      JSON.stringify({ id: 'task-7', input: { question: 'What is 2+2?' } }),
    );
    assert.deepEqual(
      fake.deletes.filter((d) => d.name === name),
      [],
      'a finished Job is left to its TTL',
    );
  });

  void it('maps a non-zero agent exit to agent_failed, keeping head and tail of a long log', async () => {
    const long = Array.from({ length: 20_000 }, (_, i) => `line ${i}\n`).join('') + 'Traceback: boom\n';
    const { result } = await drive('exit3', (n) => fake.finish(n, 3, long));
    assert.equal(result.outcome, 'agent_failed');
    assert.equal(result.exitCode, 3);
    const log = (await s3.read(result.stdoutKey)).toString();
    assert.ok(log.startsWith('line 0\nline 1\n'));
    assert.match(log, /\[volt: log truncated after 131072 bytes; last 500 lines follow\]\nline 19501\n/);
    assert.ok(log.endsWith('line 19999\nTraceback: boom\n'));
  });

  void it('maps eviction, lost nodes and image pull failures to infra_failed and deletes stuck Jobs', async () => {
    const evicted = await drive('evicted', (n) => fake.evict(n));
    assert.equal(evicted.result.outcome, 'infra_failed');
    assert.match(evicted.result.detail ?? '', /Evicted/);
    const lost = await drive('lost', (n) => fake.loseNode(n));
    assert.equal(lost.result.outcome, 'infra_failed');
    assert.match(lost.result.detail ?? '', /NodeLost/);
    const pull = await drive('pull', (n) => fake.failImagePull(n));
    assert.equal(pull.result.outcome, 'infra_failed');
    assert.match(pull.result.detail ?? '', /ImagePullBackOff/);
    assert.deepEqual(
      fake.deletes.find((d) => d.name === pull.name),
      { name: pull.name, propagationPolicy: 'Background' },
    );
  });

  void it('maps an exceeded activeDeadlineSeconds to timed_out', async () => {
    const { result } = await drive('deadline', (n) => fake.exceedDeadline(n));
    assert.equal(result.outcome, 'timed_out');
    assert.match(result.detail ?? '', /deadline/);
  });

  void it('maps API failures on create and while watching to infra_failed', async () => {
    fake.failNext(1);
    const create = await runner.run(specFor(['a'], { ref: ref('create-fails') }), new AbortController().signal);
    assert.equal(create.outcome, 'infra_failed');
    assert.match(create.detail ?? '', /create Job .*HTTP 503/);
    // Each poll is two LISTs (Jobs, pods); three failed polls in a row give up.
    const watch = await drive('watch-fails', () => fake.failNext(6));
    assert.equal(watch.result.outcome, 'infra_failed');
    assert.match(watch.result.detail ?? '', /watching Job .*HTTP 503/);
  });

  void it('cancel deletes the Job with propagationPolicy Background and rejects with AbortError', async () => {
    const spec = specFor(['sleep', '1000'], { ref: ref('cancel') });
    const controller = new AbortController();
    const running = runner.run(spec, controller.signal);
    const name = jobName(spec.ref);
    await created(fake, name);
    controller.abort(new Error('run cancelled'));
    await assert.rejects(running, { name: 'AbortError' });
    assert.deepEqual(
      fake.deletes.find((d) => d.name === name),
      { name, propagationPolicy: 'Background' },
    );
    assert.equal(fake.jobs.has(name), false);
  });

  void it('retries an evicted rollout as a new Job with a new token', async () => {
    const register = async (r: RolloutRef) => ({
      baseUrl: `http://gateway.volt:8400/r/tok-${r.attempt}/v1`,
      token: `tok-${r.attempt}`,
    });
    const spec = specFor(['agent'], { ref: ref('retry') });
    const done = runWithRetries(runner, spec, { maxAttempts: 3, register, signal: new AbortController().signal });
    await created(fake, jobName(ref('retry', 0)));
    fake.evict(jobName(ref('retry', 0)));
    const second = await created(fake, jobName(ref('retry', 1)));
    assert.equal(
      second.spec?.template.spec?.initContainers?.[0]?.env?.find((e) => e.name === 'OPENAI_API_KEY')?.value,
      'tok-1',
    );
    fake.finish(jobName(ref('retry', 1)), 0);
    assert.deepEqual(
      (await done).map((r) => r.outcome),
      ['infra_failed', 'succeeded'],
    );
  });

  void it('watches many running Jobs with one LIST of Jobs and one of pods per poll, not one call per Job', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `many-${i}`);
    const before = fake.requests.length;
    const t0 = performance.now();
    const runs = ids.map((id) => runner.run(specFor(['a'], { ref: ref(id) }), new AbortController().signal));
    await Promise.all(ids.map((id) => created(fake, jobName(ref(id)))));
    await sleep(200);
    for (const id of ids) fake.finish(jobName(ref(id)), 0);
    assert.deepEqual(
      (await Promise.all(runs)).map((r) => r.outcome),
      ids.map(() => 'succeeded'),
    );
    const polls = Math.ceil((performance.now() - t0) / config.pollIntervalMs) + 1;
    const calls = fake.requests.slice(before);
    const lists = calls.filter((c) => c === 'GET /apis/batch/v1/namespaces/volt-rollouts/jobs').length;
    assert.ok(lists <= polls, `${lists} Job LISTs for at most ${polls} polls`);
    assert.equal(
      calls.filter((c) => /^GET \/apis\/batch\/v1\/namespaces\/[^/]+\/jobs\/./.test(c)).length,
      0,
      'no per-Job GETs',
    );
  });

  void it('the fake rejects a Job that fails schema validation with a 422 Status', async () => {
    const batch = kc.makeApiClient(BatchV1Api);
    const bad = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'bad' },
      spec: { template: { spec: { containers: [{ image: 'x' }] } } },
    };
    await assert.rejects(
      batch.createNamespacedJob({ namespace: 'volt-rollouts', body: bad as V1Job }),
      (e: unknown) =>
        e instanceof ApiException && e.code === 422 && /must have required property name/.test(String(e.body)),
    );
  });

  void it('rate-limits Job creation with a token bucket', async () => {
    const limited = new KubeRunner(kc, { ...config, createsPerSecond: 10, createBurst: 1 }, s3.sink);
    const ids = ['rl-0', 'rl-1', 'rl-2', 'rl-3'];
    const runs = ids.map((id) => limited.run(specFor(['a'], { ref: ref(id) }), new AbortController().signal));
    const jobs = await Promise.all(ids.map((id) => created(fake, jobName(ref(id)))));
    for (const id of ids) fake.finish(jobName(ref(id)), 0);
    await Promise.all(runs);
    const times = jobs
      .map((j) => new Date(j.metadata?.creationTimestamp as unknown as string).getTime())
      .sort((a, b) => a - b);
    // Burst 1 at 10/s: four creations span at least three refill intervals of 100 ms.
    assert.ok(
      (times[3] as number) - (times[0] as number) >= 280,
      `4 creations took only ${(times[3] as number) - (times[0] as number)} ms`,
    );
  });
});
