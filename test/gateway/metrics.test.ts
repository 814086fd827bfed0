import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadEnv } from '../../src/config/env.js';
import { runGateway } from '../../src/gateway/server.js';
import { freePort } from '../../src/stack/ports.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, type RunningGateway } from './harness.js';
// The upstream is the FAKE scripted model server (test/gateway/scripted-upstream.ts).
import { startScriptedGateway, stopScriptedGateway, type ScriptedUpstream } from './scripted-upstream.js';

const METRICS_KEY = 'prometheus-scrape-key-0123';
const ADMIN = 'admin-key-for-metrics-test';

const scrape = (port: number, key?: string) =>
  fetch(`http://127.0.0.1:${port}/metrics`, { headers: key ? { authorization: `Bearer ${key}` } : {} }).then(
    async (r) => ({ status: r.status, text: await r.text() }),
  );

void describe('gateway /metrics key', () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  async function gatewayOn(vars: Record<string, string>) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'volt-metrics-'));
    dirs.push(dataDir);
    const port = await freePort();
    // No S3 server: the gateway starts anyway, which is all scraping needs.
    const env = loadEnv({
      VOLT_DATA_DIR: dataDir,
      VOLT_GATEWAY_URL: `http://127.0.0.1:${port}`,
      VOLT_GATEWAY_ADMIN_KEY: ADMIN,
      VOLT_S3_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      ...vars,
    });
    return { app: await runGateway(env), port };
  }

  void it('is open on loopback, as before', async () => {
    const { app, port } = await gatewayOn({});
    try {
      const res = await scrape(port);
      assert.equal(res.status, 200);
      assert.match(res.text, /volt_gateway_wal_bytes/);
    } finally {
      await app.close();
    }
  });

  void it('beyond loopback needs the admin key, or VOLT_GATEWAY_METRICS_KEY when set; a wrong one gets a 401 in the error shape', async () => {
    const { app, port } = await gatewayOn({ VOLT_GATEWAY_LISTEN_HOST: '0.0.0.0' });
    try {
      const none = await scrape(port);
      assert.equal(none.status, 401);
      assert.equal((JSON.parse(none.text) as { error: { code: string } }).error.code, 'invalid_metrics_key');
      assert.equal((await scrape(port, 'wrong-key-wrong-key')).status, 401);
      assert.equal((await scrape(port, ADMIN)).status, 200);
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, 'the readiness probe stays open');
    } finally {
      await app.close();
    }
    const keyed = await gatewayOn({ VOLT_GATEWAY_LISTEN_HOST: '0.0.0.0', VOLT_GATEWAY_METRICS_KEY: METRICS_KEY });
    try {
      assert.equal((await scrape(keyed.port)).status, 401);
      assert.equal((await scrape(keyed.port, METRICS_KEY)).status, 200);
      assert.equal((await scrape(keyed.port, ADMIN)).status, 200);
    } finally {
      await keyed.app.close();
    }
  });

  void it('refuses a metrics key shorter than 16 characters at startup, naming the variable', () => {
    assert.throws(() => loadEnv({ VOLT_GATEWAY_METRICS_KEY: 'short' }), /VOLT_GATEWAY_METRICS_KEY/);
  });
});

void describe('gateway metrics of spans and uploads', () => {
  let services: TestServices, upstream: ScriptedUpstream, gw: RunningGateway;
  before(async () => ({ services, upstream, gw } = await startScriptedGateway({ metricsKey: METRICS_KEY })));
  after(() => stopScriptedGateway({ services, upstream, gw }));

  const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

  void it('counts span bytes, uploaded bytes and the upload lag of each span', async () => {
    const port = Number(new URL(gw.url).port);
    const before = await scrape(port, METRICS_KEY);
    assert.equal(value(before.text, 'volt_gateway_span_bytes_total'), 0);
    const { token, baseUrl } = await gw.admin.register(rolloutInput());
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 200);
      await res.text();
    }
    assert.deepEqual(await gw.admin.close(token), { spans: 3, upstreamFailures: 0 });
    const after = await scrape(port, METRICS_KEY);
    assert.equal(after.status, 200);
    assert.ok(value(after.text, 'volt_gateway_span_bytes_total') > 3 * 500, 'three spans of some hundred bytes each');
    assert.ok(value(after.text, 'volt_gateway_span_upload_bytes_total') > 0);
    assert.equal(value(after.text, 'volt_gateway_span_upload_lag_seconds_count'), 3, 'one lag observation per span');
    assert.equal(value(after.text, 'volt_gateway_spans_pending_upload'), 0);
  });
});
