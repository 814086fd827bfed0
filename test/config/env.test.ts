import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadEnv } from '../../src/config/env.js';
import { ConfigError } from '../../src/config/errors.js';

function configError(source: NodeJS.ProcessEnv): ConfigError {
  try {
    loadEnv(source);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('loadEnv accepted a bad environment');
}

void describe('loadEnv', () => {
  void it('fills defaults, resolves the data dir against cwd, and freezes', () => {
    const env = loadEnv({}, '/srv/volt');
    assert.equal(env.VOLT_TEMPORAL_ADDRESS, '127.0.0.1:7233');
    assert.equal(env.VOLT_TEMPORAL_UI_PORT, 8233);
    assert.equal(env.VOLT_S3_ENDPOINT, 'http://127.0.0.1:9100');
    assert.equal(env.dataDir, path.join('/srv/volt', '.volt'));
    assert.equal(env.VOLT_GATEWAY_WAL_SYNC, 'write');
    assert.equal(env.VOLT_GATEWAY_WAL_SYNC_INTERVAL_MS, 100);
    assert.equal(env.VOLT_GATEWAY_LISTEN_HOST, '127.0.0.1');
    assert.ok(Object.isFrozen(env));
  });

  void it('coerces ports and ignores non-VOLT and empty variables', () => {
    const env = loadEnv({ VOLT_TEMPORAL_UI_PORT: '18233', VOLT_S3_BUCKET: '', HOME: '/root' });
    assert.equal(env.VOLT_TEMPORAL_UI_PORT, 18233);
    assert.equal(env.VOLT_S3_BUCKET, 'volt');
    assert.equal((env as Record<string, unknown>).HOME, undefined);
  });

  const cases: [string, string, RegExp][] = [
    ['VOLT_S3_ENDPOINT', 'notaurl', /VOLT_S3_ENDPOINT: .*URL/i],
    ['VOLT_TEMPORAL_ADDRESS', 'no-port-here', /VOLT_TEMPORAL_ADDRESS: expected host:port/],
    ['VOLT_TEMPORAL_UI_PORT', '70000', /VOLT_TEMPORAL_UI_PORT: /],
    ['VOLT_TEMPORAL_UI_PORT', 'eighty', /VOLT_TEMPORAL_UI_PORT: /],
    ['VOLT_S3_BUCKET', 'Bad_Bucket', /VOLT_S3_BUCKET: invalid S3 bucket name/],
    ['VOLT_S3_SECRET_KEY', 'short', /VOLT_S3_SECRET_KEY: /],
    ['VOLT_GATEWAY_WAL_SYNC', 'sometimes', /VOLT_GATEWAY_WAL_SYNC: /],
    ['VOLT_GATEWAY_WAL_SYNC_INTERVAL_MS', '0', /VOLT_GATEWAY_WAL_SYNC_INTERVAL_MS: /],
    ['VOLT_GATEWAY_LISTEN_HOST', 'http://0.0.0.0', /VOLT_GATEWAY_LISTEN_HOST: expected an IP address/],
    ['VOLT_GATEWAY_LISTEN_HOST', '0.0.0.0:8400', /VOLT_GATEWAY_LISTEN_HOST: expected an IP address/],
  ];

  void it('accepts IPv4, IPv6 and host names as the gateway listen host', () => {
    for (const host of ['0.0.0.0', '::', '127.0.0.1', 'volt-gateway.volt.svc']) {
      assert.equal(loadEnv({ VOLT_GATEWAY_LISTEN_HOST: host }).VOLT_GATEWAY_LISTEN_HOST, host);
    }
  });
  for (const [name, value, message] of cases) {
    void it(`${name}=${value} is rejected with the field's path`, () => {
      const err = configError({ [name]: value });
      assert.deepEqual(
        err.issues.map((i) => i.path),
        [name],
      );
      assert.match(err.message, message);
    });
  }

  void it('names every bad field at once', () => {
    const err = configError({ VOLT_S3_ENDPOINT: 'notaurl', VOLT_GATEWAY_URL: 'also bad' });
    assert.deepEqual(err.issues.map((i) => i.path).sort(), ['VOLT_GATEWAY_URL', 'VOLT_S3_ENDPOINT']);
  });
});
