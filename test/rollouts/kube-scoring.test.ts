import assert from 'node:assert/strict';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig, type V1Job } from '@kubernetes/client-node';
import type { ProcessOutcome } from '../../src/rewards/run-process.js';
import { jobName } from '../../src/rollouts/kube-job.js';
import { KubeRunner } from '../../src/rollouts/kube-runner.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { playPod } from './play-pod.js';
import { specFor, startLogStore, tempDir } from './fixtures.js';

const CHECK = ['sh', '-c', 'cat hidden_tests/check.txt && test -f fixed.txt && echo "2 passed"'];

/**
 * The Kubernetes runner's workdir, output file and scoring step against the FAKE Kubernetes API (no cluster runs
 * here). The pod is played for real: its agent (init) container and its score container run the commands of the
 * Job the runner created, in bubblewrap with the pod's volumes bound at their mount paths, so the generated scripts,
 * the markers and the hidden-file mount are what is tested, not a transcription of them.
 */
void describe('KubeRunner: workdir, output file and scoring in the pod', () => {
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
    dir = await tempDir('kube-pod');
  });
  after(async () => {
    await fake.stop();
    await s3.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function created(name: string): Promise<V1Job> {
    for (let i = 0; i < 500 && !fake.jobs.has(name); i++) await sleep(10);
    return fake.jobs.get(name)!;
  }

  void it('runs the checks after the agent in the pod, with hidden files the agent never had, and reports them with the outcome', async () => {
    // The agent writes its answer and a file the check wants, looks for the hidden files, and exits 3.
    const agent = [
      '/bin/sh',
      '-c',
      'echo 42 > "$VOLT_OUTPUT_FILE"; touch fixed.txt; ls /volt/hidden hidden_tests 2>&1 | head -3; cat /volt/task/task.json; exit 3',
    ];
    const spec = specFor(agent, {
      ref: { runId: 'run-k', iteration: 0, rolloutId: 'scored', attempt: 0 },
      hiddenFiles: { 'hidden_tests/check.txt': 'HIDDEN-CONTENT\n' },
      scoringCommands: [{ argv: CHECK, timeoutMs: 10_000 }],
    });
    let checked: ProcessOutcome | null = null;
    let unknown: unknown = null;
    const running = runner.run(spec, new AbortController().signal, {
      afterAgent: async (workdir, _result, exec) => {
        assert.equal(workdir, '/workspace');
        checked = await exec(CHECK, { timeoutMs: 10_000 });
        unknown = await exec(['rm', '-rf', '/'], { timeoutMs: 1000 }).catch((e: Error) => e);
      },
    });
    const name = jobName(spec.ref);
    const job = await created(name);
    const pod = job.spec!.template.spec!;
    assert.deepEqual(
      pod.initContainers?.map((c) => c.name),
      ['agent'],
    );
    assert.deepEqual(
      pod.containers.map((c) => c.name),
      ['score'],
    );
    assert.ok(
      !pod.initContainers![0]!.volumeMounts!.some((m) => m.name === 'hidden'),
      'the agent never mounts the hidden files',
    );
    assert.equal(
      pod.initContainers![0]!.env!.find((e) => e.name === 'VOLT_OUTPUT_FILE')?.value,
      '/volt/out/output.txt',
    );
    assert.equal(JSON.stringify(pod.initContainers![0]!.env).includes('HIDDEN-CONTENT'), false);

    const {
      logs: { agent: agentLog = '', score: scoreLog = '' },
    } = await playPod(job, dir);
    assert.match(agentLog, /No such file or directory/);
    assert.doesNotMatch(agentLog, /HIDDEN-CONTENT/);
    fake.finishScored(name, agentLog, scoreLog);
    const result = await running;
    assert.equal(result.outcome, 'agent_failed', result.detail ?? '');
    assert.equal(result.exitCode, 3);
    assert.equal(result.outputText, '42\n');
    assert.equal((await s3.read(result.stdoutKey)).toString(), agentLog);
    assert.deepEqual(checked, { exitCode: 0, timedOut: false, stdout: 'HIDDEN-CONTENT\n2 passed\n', stderr: '' });
    assert.match(String(unknown), /was not run in the pod's scoring step/);
    assert.deepEqual(await readdir(path.join(dir, name, 'workspace', 'hidden_tests')), ['check.txt']);
  });

  void it('a pod whose score step never reported is infra_failed, not a score', async () => {
    const spec = specFor(['/bin/true'], {
      ref: { runId: 'run-k', iteration: 0, rolloutId: 'silent', attempt: 0 },
      scoringCommands: [{ argv: CHECK, timeoutMs: 10_000 }],
    });
    let called = false;
    const running = runner.run(spec, new AbortController().signal, {
      afterAgent: async () => {
        called = true;
      },
    });
    const name = jobName(spec.ref);
    await created(name);
    // Whatever the agent printed, without the Job's nonce it is not the step's report.
    fake.finishScored(name, '', '::0000 agent-exit 0\n');
    const result = await running;
    assert.equal(result.outcome, 'infra_failed');
    assert.match(result.detail ?? '', /score step did not report/);
    assert.equal(called, false);
  });

  void it('without checks or hidden files the pod still has its score step, which reports the output file', async () => {
    const spec = specFor(['/bin/true'], { ref: { runId: 'run-k', iteration: 0, rolloutId: 'plain', attempt: 0 } });
    const running = runner.run(spec, new AbortController().signal);
    const name = jobName(spec.ref);
    const job = await created(name);
    assert.deepEqual(
      job.spec?.template.spec?.initContainers?.map((c) => c.name),
      ['agent'],
    );
    assert.deepEqual(
      job.spec?.template.spec?.containers.map((c) => c.name),
      ['score'],
    );
    fake.finish(name, 0, '', '7');
    const result = await running;
    assert.equal(result.outcome, 'succeeded');
    assert.equal(result.outputText, '7');
  });
});
