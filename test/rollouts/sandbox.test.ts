import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { access, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { objectStoreLogSink } from '../../src/rollouts/log-sink.js';
import type { RolloutSpecInput } from '../../src/rollouts/spec.js';
import { keys } from '../../src/storage/keys.js';
import { startGateway, rolloutInput, type RunningGateway } from '../gateway/harness.js';
import { SERVED_MODEL, startModelServer } from '../gateway/model-server.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { agent, specFor, tempDir } from './fixtures.js';

type Report = Record<string, { breached: boolean; detail: string }>;

/**
 * A hostile agent (agents/escape-probe.mjs) in a real bubblewrap sandbox, against a real gateway, S3 server, Temporal
 * dev server and model server: every way out fails while its own gateway call works; with sandbox 'none' the same
 * agent gets through, so these assertions can fail.
 */
void describe('sandboxed local runner', () => {
  let services: TestServices;
  let store: ObjectStore;
  let model: Awaited<ReturnType<typeof startModelServer>>;
  let gateway: RunningGateway;
  let root: string;
  let runner: LocalRunner;
  let other: ReturnType<typeof spawn>;
  const secret = `volt-secret-${process.pid}-${Date.now()}`;
  const homeFile = path.join(homedir(), `.volt-sandbox-test-${process.pid}`);
  const outsideFile = path.join(process.cwd(), `.volt-sandbox-escape-${process.pid}`);
  const tmpName = `volt-sandbox-tmp-${process.pid}`;

  void before(async () => {
    [services, model] = await Promise.all([startTestServices({ temporal: true, s3: true }), startModelServer()]);
    store = createObjectStore(services.s3);
    await store.ensureBucket();
    gateway = await startGateway(store, services.dataDir, model.url);
    root = await tempDir('sandbox-rollouts');
    runner = new LocalRunner({ root, logs: objectStoreLogSink(store), hide: [services.dataDir] });
    // Another rollout's workdir next to ours, and another process holding a secret in its environment.
    await mkdir(path.join(root, 'run-1', '000000', 'other', 'attempt-0', 'work'), { recursive: true });
    await writeFile(path.join(root, 'run-1', '000000', 'other', 'attempt-0', 'work', 'secret.txt'), secret);
    await writeFile(homeFile, secret);
    other = spawn('sleep', ['300'], { env: { OTHER_SECRET: secret, PATH: process.env.PATH }, stdio: 'ignore' });
  });
  void after(async () => {
    other.kill('SIGKILL');
    await runner.close();
    await gateway.close();
    await Promise.all([
      model.stop(),
      services.stop(),
      rm(homeFile, { force: true }),
      rm(outsideFile, { force: true }),
      rm(path.join('/tmp', tmpName), { force: true }),
    ]);
  });

  async function probe(
    rolloutId: string,
    over: Partial<RolloutSpecInput>,
  ): Promise<{ report: Report; spans: number; outcome: string }> {
    const reg = await gateway.admin.register(
      rolloutInput({ runId: 'run-1', iteration: 0, rolloutId, policyModel: SERVED_MODEL }),
    );
    const s3Port = Number(new URL(services.s3.endpoint).port);
    const spec = specFor([process.execPath, agent('escape-probe.mjs')], {
      ref: { runId: 'run-1', iteration: 0, rolloutId, attempt: 0 },
      gateway: { baseUrl: reg.baseUrl, token: reg.token },
      timeoutMs: 60_000,
      taskInput: {
        registryFile: path.join(gateway.dataDir, 'gateway', 'rollouts.json'),
        otherPid: other.pid,
        otherWorkdirFile: path.join(root, 'run-1', '000000', 'other', 'attempt-0', 'work', 'secret.txt'),
        homeDir: homedir(),
        homeFile,
        ports: {
          s3: s3Port,
          temporal: Number(services.temporalAddress.split(':')[1]),
          modelServer: Number(new URL(model.url).port),
        },
        outsideFile,
        tmpName,
        forkAttempts: 200,
        allocMb: 768,
      },
      limits: { processes: 64, memoryMb: 384 },
      ...over,
    });
    const result = await runner.run(spec, new AbortController().signal);
    const closed = await gateway.admin.close(reg.token);
    assert.ok(
      result.outputText,
      `no report; stderr: ${(await store.getBytes(result.stderrKey)).toString().slice(0, 2000)}`,
    );
    return { report: JSON.parse(result.outputText) as Report, spans: closed.spans, outcome: result.outcome };
  }

  void it("contains every escape while the agent's own gateway call succeeds and is recorded", async () => {
    const { report, spans, outcome } = await probe('sandboxed', {});
    assert.equal(outcome, 'succeeded');
    assert.equal(report.ownGatewayCall?.breached, true, report.ownGatewayCall?.detail);
    assert.equal(spans, 1, 'the call was recorded as a span');
    assert.ok(
      await store.getBytes(
        keys.rolloutLog({ runId: 'run-1', iteration: 0, rolloutId: 'sandboxed', attempt: 0 }, 'stderr'),
      ),
    );
    for (const name of [
      'gatewayRegistry',
      'otherProcessEnviron',
      'otherWorkdir',
      'homeFile',
      'homeListing',
      'connect:s3',
      'connect:temporal',
      'connect:modelServer',
      'adminApi',
      'writeOutside',
      'forkBomb',
      'overAllocate',
    ]) {
      assert.equal(report[name]?.breached, false, `${name}: ${report[name]?.detail}`);
    }
    assert.match(report.adminApi?.detail ?? '', /^401$/, 'the admin API refuses a caller without the admin key');
    assert.match(report.forkBomb?.detail ?? '', /children, then EAGAIN/);
    // /tmp is private: the agent could write there, and nothing appeared in the host's /tmp.
    assert.equal(report.writePrivateTmp?.breached, true);
    await assert.rejects(access(path.join('/tmp', tmpName)), { code: 'ENOENT' });
    await assert.rejects(access(outsideFile), { code: 'ENOENT' });
    assert.equal(
      await readFile(path.join(root, 'run-1', '000000', 'other', 'attempt-0', 'work', 'secret.txt'), 'utf8'),
      secret,
    );
  });

  void it('an agent whose program is missing inside the sandbox is infra_failed with the reason, never agent_failed', async () => {
    // A CLI that is not installed (a bare name not on PATH) and a path that does not exist: the agent never started.
    for (const [rolloutId, program] of [
      ['missing-cli', `volt-no-such-agent-cli-${process.pid}`],
      ['missing-path', `/nonexistent/volt-agent-${process.pid}`],
    ] as const) {
      const spec = specFor([program, '--print', 'hello'], {
        ref: { runId: 'run-1', iteration: 0, rolloutId, attempt: 0 },
        timeoutMs: 30_000,
      });
      assert.notEqual(spec.sandbox, 'none', 'the default spec is sandboxed');
      const result = await runner.run(spec, new AbortController().signal);
      assert.equal(result.outcome, 'infra_failed', `${program}: ${result.detail}`);
      assert.match(result.detail ?? '', /(spawn .* failed|sandbox failed): .*(ENOENT|No such file|not found)/);
      assert.ok(result.detail?.includes(program), `the reason names the program: ${result.detail}`);
    }
  });

  void it('the same agent with sandbox "none" gets through (the difference the sandbox makes)', async () => {
    const { report, outcome } = await probe('unsandboxed', { sandbox: 'none' });
    assert.equal(outcome, 'succeeded');
    assert.equal(report.ownGatewayCall?.breached, true);
    for (const name of [
      'gatewayRegistry',
      'otherProcessEnviron',
      'otherWorkdir',
      'homeFile',
      'connect:s3',
      'connect:temporal',
      'connect:modelServer',
      'writeOutside',
      'forkBomb',
      'overAllocate',
    ]) {
      assert.equal(report[name]?.breached, true, `${name}: ${report[name]?.detail}`);
    }
    assert.match(report.otherProcessEnviron?.detail ?? '', new RegExp(secret));
  });
});
