import assert from 'node:assert/strict';
import { mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { credentialsFile, installationCredentials } from '../../src/config/credentials.js';
import { loadEnv, loadInstallationEnv } from '../../src/config/env.js';

void describe('installation credentials', () => {
  void it('are generated once per data dir (mode 0600) and used where the environment sets none', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'volt-creds-'));
    const env = loadInstallationEnv({ VOLT_DATA_DIR: 'data' }, root);
    const file = credentialsFile(path.join(root, 'data'));
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const defaults = loadEnv({}, root);
    for (const key of [
      'VOLT_S3_ACCESS_KEY',
      'VOLT_S3_SECRET_KEY',
      'VOLT_GATEWAY_ADMIN_KEY',
      'VOLT_MODEL_SERVER_ADMIN_KEY',
    ] as const) {
      assert.notEqual(env[key], defaults[key], `${key} is still the public default`);
    }
    assert.ok(env.VOLT_GATEWAY_ADMIN_KEY.length >= 32);
    assert.notEqual(env.VOLT_GATEWAY_ADMIN_KEY, env.VOLT_MODEL_SERVER_ADMIN_KEY);
    // The same installation keeps its keys; another one gets its own.
    assert.deepEqual(loadInstallationEnv({ VOLT_DATA_DIR: 'data' }, root), env);
    const other = loadInstallationEnv({ VOLT_DATA_DIR: 'other' }, root);
    assert.notEqual(other.VOLT_S3_SECRET_KEY, env.VOLT_S3_SECRET_KEY);
  });

  void it('yield to the environment, and a broken file is a clear error', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'volt-creds-'));
    const env = loadInstallationEnv({
      VOLT_DATA_DIR: root,
      VOLT_S3_SECRET_KEY: 'from-the-env-123',
      VOLT_GATEWAY_ADMIN_KEY: 'admin-from-env',
    });
    assert.equal(env.VOLT_S3_SECRET_KEY, 'from-the-env-123');
    assert.equal(env.VOLT_GATEWAY_ADMIN_KEY, 'admin-from-env');
    assert.equal(env.VOLT_S3_ACCESS_KEY, installationCredentials(root).VOLT_S3_ACCESS_KEY);
    const broken = await mkdtemp(path.join(tmpdir(), 'volt-creds-'));
    await writeFile(credentialsFile(broken), JSON.stringify({ VOLT_S3_ACCESS_KEY: 'ab' }), { mode: 0o644 });
    assert.throws(() => installationCredentials(broken), /VOLT_S3_ACCESS_KEY: .*VOLT_S3_SECRET_KEY: /s);
    assert.equal((await stat(credentialsFile(broken))).mode & 0o777, 0o600, 'loosened permissions are tightened again');
  });
});
