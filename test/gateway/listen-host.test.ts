import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadEnv } from '../../src/config/env.js';
import { runGateway } from '../../src/gateway/server.js';
import { freePort } from '../../src/stack/ports.js';

// 127.0.0.2 is loopback too, but a socket bound to 127.0.0.1 alone does not answer there: it stands in for the
// pod IP a Kubernetes Service forwards to.
const answersAt = (host: string, port: number) =>
  fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
    (r) => r.status,
    (err: Error) => (err.cause as NodeJS.ErrnoException | undefined)?.code ?? err.message,
  );

void describe('gateway listen host (VOLT_GATEWAY_LISTEN_HOST)', () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  async function gatewayOn(listenHost: string | undefined) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'volt-listen-'));
    dirs.push(dataDir);
    const port = await freePort();
    // No S3 server: the gateway starts anyway (spans would wait in the WAL), which is all this test needs.
    const env = loadEnv({
      VOLT_DATA_DIR: dataDir,
      VOLT_GATEWAY_URL: `http://volt-gateway.volt.svc:${port}`,
      VOLT_S3_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      ...(listenHost ? { VOLT_GATEWAY_LISTEN_HOST: listenHost } : {}),
    });
    const app = await runGateway(env);
    return { app, port };
  }

  void it('binds loopback only by default', async () => {
    const { app, port } = await gatewayOn(undefined);
    try {
      assert.equal((app.server.address() as AddressInfo).address, '127.0.0.1');
      assert.equal(await answersAt('127.0.0.1', port), 200);
      assert.equal(await answersAt('127.0.0.2', port), 'ECONNREFUSED');
    } finally {
      await app.close();
    }
  });

  void it('binds every interface with 0.0.0.0, on the port of VOLT_GATEWAY_URL', async () => {
    const { app, port } = await gatewayOn('0.0.0.0');
    try {
      assert.deepEqual(app.server.address() as AddressInfo, { address: '0.0.0.0', family: 'IPv4', port });
      assert.equal(await answersAt('127.0.0.1', port), 200);
      assert.equal(await answersAt('127.0.0.2', port), 200);
    } finally {
      await app.close();
    }
  });
});
