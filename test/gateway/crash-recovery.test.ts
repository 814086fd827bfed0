import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Span } from '../../src/contracts/span.js';
import { GatewayAdminClient } from '../../src/gateway/admin-client.js';
import { readSpans } from '../../src/storage/spans.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { freePort } from '../../src/stack/ports.js';
import type { TestServices } from '../helpers/services.js';
import { ADMIN_KEY, rolloutInput, startStore } from './harness.js';
// The upstream is the FAKE scripted model server (test/gateway/scripted-upstream.ts).
import { startScriptedUpstream } from './scripted-upstream.js';

let services: TestServices;
let store: ObjectStore;
let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
const children: ChildProcess[] = [];

before(async () => {
  ({ services, store } = await startStore());
  upstream = await startScriptedUpstream();
});
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await upstream?.close();
  await services?.stop();
});

/** The real gateway process (`node --import tsx src/gateway/server.ts`), ready once /healthz answers. */
async function spawnGateway(dataDir: string, port: number, s3Endpoint: string, walSync: string): Promise<ChildProcess> {
  const env = {
    ...process.env,
    ...services.env,
    VOLT_GATEWAY_WAL_SYNC: walSync,
    VOLT_S3_ENDPOINT: s3Endpoint,
    VOLT_DATA_DIR: dataDir,
    VOLT_GATEWAY_URL: `http://127.0.0.1:${port}`,
    VOLT_GATEWAY_ADMIN_KEY: ADMIN_KEY,
    VOLT_MODEL_SERVER_URL: upstream.url,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/gateway/server.ts'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  for (const started = Date.now(); Date.now() - started < 30_000; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`gateway exited ${child.exitCode}: ${output}`);
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
  }
  throw new Error(`gateway did not become ready: ${output}`);
}

const chat = JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });

void describe('gateway crash recovery', () => {
  // 'write' is the default; 'fsync' must survive a process kill too (it adds OS-crash safety on top).
  for (const walSync of ['write', 'fsync']) {
    void it(`kill -9 right after a response (WAL sync '${walSync}'): the restarted gateway uploads the span from the WAL and the token still works`, async () => {
      const dataDir = fs.mkdtempSync(path.join(services.dataDir, 'crash-'));
      const port = await freePort('127.0.0.1');
      // The first process cannot reach S3, so the delivered span exists only in its WAL when it dies.
      const deadS3 = `http://127.0.0.1:${await freePort('127.0.0.1')}`;
      const first = await spawnGateway(dataDir, port, deadS3, walSync);
      const admin = new GatewayAdminClient(`http://127.0.0.1:${port}`, ADMIN_KEY);
      const input = rolloutInput();
      const { token, baseUrl } = await admin.register(input);
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chat,
      });
      assert.equal(res.status, 200);
      await res.text();
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      const walFiles = fs.readdirSync(path.join(dataDir, 'gateway', 'wal'));
      assert.equal(walFiles.length, 1, 'the span waits in the WAL');

      const second = await spawnGateway(dataDir, port, services.s3.endpoint, walSync);
      let span: Span | null = null;
      for (const started = Date.now(); !span && Date.now() - started < 15_000; await sleep(100)) {
        for await (const s of readSpans(store, input)) span ??= s;
      }
      assert.ok(span, 'the span reached the object store after restart');
      assert.equal(span.status, 'ok');
      assert.equal(span.rolloutId, input.rolloutId);

      const again = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chat,
      });
      assert.equal(again.status, 200, 'the rollout token survived the restart');
      assert.deepEqual(await admin.close(token), { spans: 2, upstreamFailures: 0 });
      const seqs: number[] = [];
      for await (const s of readSpans(store, input)) seqs.push(s.seq);
      assert.deepEqual(seqs, [0, 1]);
      for (let i = 0; i < 50 && fs.readdirSync(path.join(dataDir, 'gateway', 'wal')).includes(walFiles[0]!); i++)
        await sleep(100);
      assert.equal(
        fs.readdirSync(path.join(dataDir, 'gateway', 'wal')).includes(walFiles[0]!),
        false,
        'the replayed segment is deleted once uploaded',
      );

      second.kill('SIGTERM');
      assert.equal(await new Promise((r) => second.once('exit', r)), 0, 'graceful SIGTERM exits 0');
    });
  }

  void it('budget usage survives kill -9: the calls acknowledged before it, only in the WAL, still count after the restart', async () => {
    const dataDir = fs.mkdtempSync(path.join(services.dataDir, 'crash-'));
    const port = await freePort('127.0.0.1');
    const first = await spawnGateway(dataDir, port, `http://127.0.0.1:${await freePort('127.0.0.1')}`, 'write');
    const admin = new GatewayAdminClient(`http://127.0.0.1:${port}`, ADMIN_KEY);
    const budget = {
      maxModelCalls: 3,
      maxCompletionTokens: null,
      maxWallSec: null,
      maxTokensPerCall: 4096,
      maxChoicesPerCall: 4,
    };
    const { baseUrl } = await admin.register({ ...rolloutInput(), budget });
    const call = () =>
      fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chat,
      });
    for (let i = 0; i < 2; i++) {
      const res = await call();
      assert.equal(res.status, 200);
      await res.text();
    }
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));

    const second = await spawnGateway(dataDir, port, services.s3.endpoint, 'write');
    const third = await call();
    assert.equal(third.status, 200);
    await third.text();
    const refused = await call();
    assert.equal(refused.status, 429, 'the two calls before the crash and the one after use up maxModelCalls 3');
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /3 model calls used/);
    second.kill('SIGTERM');
    await new Promise((r) => second.once('exit', r));
  });

  void it('a model-side failure survives kill -9: closing the attempt after a restart still reports it', async () => {
    const dataDir = fs.mkdtempSync(path.join(services.dataDir, 'crash-'));
    const port = await freePort('127.0.0.1');
    const first = await spawnGateway(dataDir, port, services.s3.endpoint, 'write');
    const admin = new GatewayAdminClient(`http://127.0.0.1:${port}`, ADMIN_KEY);
    const input = rolloutInput();
    const { token, baseUrl } = await admin.register(input);
    for (let i = 0; i < 4; i++) upstream.script.push({ kind: 'status', status: 500 });
    const res = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat,
    });
    assert.equal(res.status, 502);
    await res.text();
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));

    const second = await spawnGateway(dataDir, port, services.s3.endpoint, 'write');
    const ok = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat,
    });
    assert.equal(ok.status, 200);
    await ok.text();
    assert.deepEqual(
      await admin.close(token),
      { spans: 2, upstreamFailures: 1 },
      'the failure before the crash still marks the attempt',
    );
    second.kill('SIGKILL');
    await new Promise((r) => second.once('exit', r));
    const third = await spawnGateway(dataDir, port, services.s3.endpoint, 'write');
    assert.deepEqual(await admin.close(token), { spans: 2, upstreamFailures: 1 }, 'and so does the closed record');
    third.kill('SIGTERM');
    await new Promise((r) => third.once('exit', r));
  });
});
