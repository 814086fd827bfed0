import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { GatewayAdminClient, type GatewayAdminError } from '../../src/gateway/admin-client.js';
import { freePort } from '../../src/stack/ports.js';
import { keys } from '../../src/storage/keys.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { parseSpanKey, readSpans } from '../../src/storage/spans.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';
import type { TestServices } from '../helpers/services.js';
import { ADMIN_KEY, rolloutInput, startStore } from './harness.js';
import { startScriptedUpstream } from './scripted-upstream.js';

let services: TestServices;
let store: ObjectStore;
let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
let s3Proxy: Awaited<ReturnType<typeof startSpanHoldingProxy>>;
const children: ChildProcess[] = [];

/**
 * FAKE fault injector: a pass-through HTTP proxy in front of the real S3 server that, while `hold` is set, never answers span PUTs (keys
 * under `/spans/`), so a replica's acknowledged spans stay in its WAL only; while `failClaims` is set it answers seq-claim
 * PUTs with 503. Everything else passes.
 */
async function startSpanHoldingProxy(target: string) {
  const to = new URL(target);
  const held: http.ServerResponse[] = [];
  const state = { hold: false, heldPuts: 0, failClaims: false };
  const server = http.createServer((req, res) => {
    res.on('error', () => undefined);
    if (state.failClaims && req.method === 'PUT' && (req.url ?? '').includes('/seq-claims/')) {
      req.resume();
      res
        .writeHead(503, { 'content-type': 'application/xml' })
        .end('<Error><Code>SlowDown</Code><Message>held by the test</Message></Error>');
      return;
    }
    if (state.hold && req.method === 'PUT' && (req.url ?? '').includes('/spans/')) {
      state.heldPuts++;
      held.push(res);
      req.resume();
      return;
    }
    const out = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

before(async () => {
  ({ services, store } = await startStore());
  upstream = await startScriptedUpstream();
  s3Proxy = await startSpanHoldingProxy(services.s3.endpoint);
});
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await s3Proxy?.close();
  await upstream?.close();
  await services?.stop();
});

/** A real gateway process (`node --import tsx src/gateway/server.ts`) as replica `replicaId`, ready once /healthz answers. */
async function spawnReplica(
  replicaId: string,
  dataDir: string,
  port: number,
  s3Endpoint: string,
): Promise<ChildProcess> {
  const env = {
    ...process.env,
    ...services.env,
    VOLT_S3_ENDPOINT: s3Endpoint,
    VOLT_DATA_DIR: dataDir,
    VOLT_GATEWAY_URL: `http://127.0.0.1:${port}`,
    VOLT_GATEWAY_ADMIN_KEY: ADMIN_KEY,
    VOLT_MODEL_SERVER_URL: upstream.url,
    VOLT_GATEWAY_REPLICA_ID: replicaId,
    VOLT_GATEWAY_CLOSE_WAIT_MS: '2000',
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/gateway/server.ts'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  for (const started = Date.now(); Date.now() - started < 60_000; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`gateway ${replicaId} exited ${child.exitCode}: ${output}`);
    if (
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return child;
  }
  throw new Error(`gateway ${replicaId} did not become ready: ${output}`);
}

async function kill(child: ChildProcess): Promise<void> {
  child.kill('SIGKILL');
  if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
}

const chat = JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
const call = (port: number, token: string) =>
  fetch(`http://127.0.0.1:${port}/r/${token}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: chat,
  }).then(async (r) => ({ status: r.status, body: await r.text() }));

/** The seqs whose spans are in the store, from key names. */
async function storedSeqs(ref: RolloutRef): Promise<number[]> {
  const seqs: number[] = [];
  for await (const { key } of store.list(keys.spans(ref))) {
    const k = parseSpanKey(key);
    if (k) for (let s = k.first; s <= k.last; s++) seqs.push(s);
  }
  return seqs.sort((a, b) => a - b);
}

async function waitForSeqs(ref: RolloutRef, want: number[], what: string): Promise<void> {
  let seen: number[] = [];
  for (const started = Date.now(); Date.now() - started < 20_000; await sleep(100)) {
    seen = await storedSeqs(ref);
    if (want.every((s) => seen.includes(s))) return;
  }
  assert.fail(`${what}: wanted seqs ${JSON.stringify(want)} in the store, saw ${JSON.stringify(seen)}`);
}

void describe('gateway replicas that share nothing but S3', () => {
  void it('serve one rollout from both, alternating; a SIGKILLed replica uploads its spans on restart; close sees every span in order', async () => {
    const [portA, portB] = [await freePort('127.0.0.1'), await freePort('127.0.0.1')];
    const dirB = fs.mkdtempSync(path.join(services.dataDir, 'replica-b-'));
    const a = await spawnReplica(
      'gw-a',
      fs.mkdtempSync(path.join(services.dataDir, 'replica-a-')),
      portA,
      services.s3.endpoint,
    );
    let b = await spawnReplica('gw-b', dirB, portB, s3Proxy.url);
    const adminA = new GatewayAdminClient(`http://127.0.0.1:${portA}`, ADMIN_KEY);
    const adminB = new GatewayAdminClient(`http://127.0.0.1:${portB}`, ADMIN_KEY);

    const x = rolloutInput();
    const y = rolloutInput();
    const z = rolloutInput();
    const regX = await adminA.register(x);
    const regY = await adminB.register(y);
    const regZ = await adminA.register(z);
    const again = await adminB.register(x);
    assert.deepEqual(
      [again.token, again.created],
      [regX.token, false],
      'registering through the other replica finds the same attempt',
    );

    // Calls alternate A, B, A, B; the last one's span is held back on its way to S3, so it lives only in B's WAL.
    const servedBy: number[] = [];
    for (let i = 0; i < 4; i++) {
      const port = i % 2 === 0 ? portA : portB;
      if (i === 3) {
        await waitForSeqs(x, [0, 1, 2], "before holding B's uploads");
        s3Proxy.state.hold = true;
      }
      assert.equal((await call(port, regX.token)).status, 200, `call ${i}`);
      servedBy.push(port);
    }
    assert.equal((await call(portB, regZ.token)).status, 200, 'B serves a rollout registered through A');
    for (let i = 0; i < 50 && s3Proxy.state.heldPuts === 0; i++) await sleep(100);
    assert.ok(s3Proxy.state.heldPuts > 0, 'B tried to upload and was held');
    await kill(b);
    assert.deepEqual(await storedSeqs(x), [0, 1, 2], 'seq 3 was acknowledged by B but is not in S3');
    assert.ok(fs.readdirSync(path.join(dirB, 'gateway', 'wal')).length > 0, "it waits in B's WAL");

    // While B is down, A serves the next call, and closing Z (whose only span is in dead B's WAL) does not wait forever:
    // the missing seq counts as a model-side failure, so the attempt is never trained on.
    assert.equal((await call(portA, regX.token)).status, 200);
    servedBy.push(portA);
    assert.deepEqual(await adminA.close(regZ.token), { spans: 0, upstreamFailures: 1, missingSpans: [0] });

    await assert.rejects(
      adminA.register(z),
      (e: GatewayAdminError) => e.status === 409,
      'a closed attempt cannot be registered again',
    );

    s3Proxy.state.hold = false;
    b = await spawnReplica('gw-b', dirB, portB, s3Proxy.url);
    await waitForSeqs(x, [0, 1, 2, 3, 4], 'after B restarted');
    assert.equal((await call(portB, regX.token)).status, 200, 'the restarted B still serves the rollout');
    servedBy.push(portB);

    // No token of another rollout works: X's ids with Y's secret, or a made-up one, on either replica.
    const forged = `${regX.token.split('.')[0]}.${regY.token.split('.')[1]}`;
    for (const port of [portA, portB]) {
      assert.equal((await call(port, forged)).status, 401, `forged token on ${port}`);
      assert.equal((await call(port, 'not-a-token')).status, 401);
      assert.equal((await call(port, '!!.garbage')).status, 401);
    }
    assert.equal((await call(portA, regY.token)).status, 200, 'A serves Y, registered through B');

    // Closing through B, which did not register X, waits for A's spans too.
    assert.deepEqual(await adminB.close(regX.token), { spans: 6, upstreamFailures: 0 });
    await assert.rejects(
      adminA.register(x),
      (e: GatewayAdminError) => e.status === 409,
      'closed through B, so A refuses to reopen it',
    );
    const spans = [];
    for await (const s of readSpans(store, x)) spans.push(s);
    assert.deepEqual(
      spans.map((s) => s.seq),
      [0, 1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      spans.map((s) => s.request.headers.host),
      servedBy.map((p) => `127.0.0.1:${p}`),
      'spans read back in call order, each from the replica that served it',
    );
    assert.ok(spans.every((s) => s.rolloutId === x.rolloutId && s.status === 'ok'));

    await sleep(1300);
    for (const port of [portA, portB])
      assert.equal((await call(port, regX.token)).status, 401, `closed X is refused on ${port}`);
    assert.deepEqual(
      await adminA.close(regX.token),
      { spans: 6, upstreamFailures: 0 },
      'a second close through the other replica answers the same',
    );
    // A model-side failure on B counts when Y is closed through A (each replica's counts are summed).
    for (let i = 0; i < 4; i++) upstream.script.push({ kind: 'status', status: 500 });
    assert.equal((await call(portB, regY.token)).status, 502);
    // A call B cannot number (its store refuses the claim) is refused too, and counts as a model-side failure.
    s3Proxy.state.failClaims = true;
    const unnumbered = await call(portB, regY.token);
    s3Proxy.state.failClaims = false;
    assert.equal(unnumbered.status, 503);
    assert.equal((JSON.parse(unnumbered.body) as { error: { code: string } }).error.code, 'seq_unavailable');
    assert.deepEqual(await adminA.close(regY.token), { spans: 2, upstreamFailures: 2 });
    assert.deepEqual(await storedSeqs(y), [0, 1]);

    for (const child of [a, b]) {
      child.kill('SIGTERM');
      assert.equal(await new Promise((r) => child.once('exit', r)), 0, 'graceful SIGTERM exits 0');
    }
  });
});
