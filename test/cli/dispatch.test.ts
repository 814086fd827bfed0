import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { commands } from '../../src/cli/command-table.js';
import { runCli } from '../../src/cli/run-cli.js';

/** Runs the dispatcher in-process with captured output. */
async function cli(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

void describe('volt dispatcher', () => {
  void it('lists every registered command in --help', async () => {
    const r = await cli(['--help']);
    assert.equal(r.code, 0);
    const lines = r.out.split('\n');
    for (const c of commands)
      assert.ok(
        lines.some((l) => l.startsWith(`  ${c.name} `) && l.endsWith(c.summary)),
        c.name,
      );
  });

  void it('without a command prints help and exits 2', async () => {
    const r = await cli([]);
    assert.equal(r.code, 2);
    assert.match(r.out, /usage: volt <command>/);
  });

  void it('an unknown command exits 2 naming it', async () => {
    const r = await cli(['trian']);
    assert.equal(r.code, 2);
    assert.match(r.err, /unknown command "trian"/);
  });

  void it('each command has its own --help with its flags', async () => {
    for (const c of commands) {
      const r = await cli([c.name, '--help']);
      assert.equal(r.code, 0, c.name);
      assert.match(r.out, new RegExp(`usage: volt ${c.name}`));
      for (const flag of Object.keys(c.options)) assert.match(r.out, new RegExp(`--${flag}`));
    }
  });

  void it('an unknown flag is a usage error (exit 2) with the command help', async () => {
    const r = await cli(['status', '--verbose']);
    assert.equal(r.code, 2);
    assert.match(r.err, /--verbose/);
    assert.match(r.err, /usage: volt status/);
  });

  void it('a bad environment exits 2 naming the variable, before touching any service', async () => {
    const r = await cli(['up'], { VOLT_S3_ENDPOINT: 'notaurl' });
    assert.equal(r.code, 2);
    assert.match(r.err, /^volt up: invalid environment: VOLT_S3_ENDPOINT: /);
  });

  void it('a non-loopback address is refused with the variable name', async () => {
    const r = await cli(['up'], { VOLT_TEMPORAL_ADDRESS: '10.0.0.5:7233', VOLT_DATA_DIR: '/nonexistent/volt' });
    assert.equal(r.code, 1);
    assert.match(r.err, /VOLT_TEMPORAL_ADDRESS: the local stack binds to 127\.0\.0\.1 only/);
  });
});
