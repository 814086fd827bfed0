import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { access, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../../src/config/errors.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { agent, specFor, startLogStore, tempDir } from './fixtures.js';

void describe('LocalRunner', () => {
  let root: string;
  let s3: Awaited<ReturnType<typeof startLogStore>>;
  let logs: Awaited<ReturnType<typeof startLogStore>>['sink'];
  void before(async () => {
    root = await tempDir('rollouts');
    s3 = await startLogStore();
    logs = s3.sink;
  });
  void after(() => s3.stop());

  void it('runs an OpenAI SDK agent against OPENAI_BASE_URL with the token, returns its output, removes the workdir', async () => {
    const seen: { url?: string; auth?: string; body?: { messages: { content: string }[] } } = {};
    const server = createServer((req: IncomingMessage, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c));
      req.on('end', () => {
        Object.assign(seen, { url: req.url, auth: req.headers.authorization, body: JSON.parse(raw) });
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            created: 1,
            model: 'policy',
            choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: '4' } }],
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    after(() => server.close());
    const { port } = server.address() as AddressInfo;
    const runner = new LocalRunner({ root, logs });
    const spec = specFor([process.execPath, agent('call-gateway.mjs')], {
      gateway: { baseUrl: `http://127.0.0.1:${port}/r/tok-a/v1`, token: 'tok-a' },
    });
    const result = await runner.run(spec, new AbortController().signal);
    assert.equal(result.outcome, 'succeeded', result.detail ?? '');
    assert.equal(result.exitCode, 0);
    assert.equal(result.outputText, '4');
    assert.equal(seen.url, '/r/tok-a/v1/chat/completions');
    assert.equal(seen.auth, 'Bearer tok-a');
    assert.equal(seen.body?.messages[0]?.content, 'What is 2+2?');
    assert.match((await s3.read(result.stdoutKey)).toString(), /answered task-7: 4/);
    assert.equal(result.stdoutKey, 'runs/run-1/iterations/000000/rollouts/r-1/attempt-000/stdout.log');
    assert.equal(result.workdir, null);
    await assert.rejects(access(path.join(root, 'run-1', '000000', 'r-1', 'attempt-0')), { code: 'ENOENT' });
  });

  void it('reports a non-zero exit as agent_failed with the exit code and the stderr log', async () => {
    const runner = new LocalRunner({ root, logs });
    const result = await runner.run(specFor([agent('exit-3.sh')]), new AbortController().signal);
    assert.equal(result.outcome, 'agent_failed');
    assert.equal(result.exitCode, 3);
    assert.equal((await s3.read(result.stderrKey)).toString(), 'agent gave up\n');
  });

  void it('passes only allow-listed variables and the contract, never operator secrets', async () => {
    const parentEnv: NodeJS.ProcessEnv = {
      ...process.env,
      VOLT_GATEWAY_ADMIN_KEY: 'admin-secret-1',
      VOLT_S3_SECRET_KEY: 's3-secret-1',
      VOLT_S3_ACCESS_KEY: 's3-access',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      LANG: 'C.UTF-8',
    };
    const runner = new LocalRunner({ root, logs, parentEnv });
    let workdir = '';
    const result = await runner.run(specFor([agent('print-env.sh')]), new AbortController().signal, {
      prepareWorkdir: async (dir) => (workdir = dir),
    });
    assert.equal(result.outcome, 'succeeded');
    const text = (await s3.read(result.stdoutKey)).toString();
    assert.doesNotMatch(text, /admin-secret-1|s3-secret-1|s3-access|aws-secret/);
    const env = new Map(
      text
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    // The shell itself adds PWD (and some shells SHLVL, _); everything else must be ours.
    const names = [...env.keys()].filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n)).sort();
    const allowed = [
      'PATH',
      'HOME',
      'LANG',
      'LC_ALL',
      'LC_CTYPE',
      'TZ',
      'TMPDIR',
      'TERM',
      'USER',
      'LOGNAME',
      'SHELL',
    ].filter((n) => parentEnv[n] !== undefined);
    const contract = [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'OPENAI_API_KEY',
      'OPENAI_BASE_URL',
      'VOLT_OUTPUT_FILE',
      'VOLT_TASK',
      'VOLT_TASK_FILE',
    ];
    assert.deepEqual(names, [...allowed, ...contract].sort());
    assert.equal(env.get('VOLT_TASK'), JSON.stringify({ id: 'task-7', input: { question: 'What is 2+2?' } }));
    assert.equal(env.get('OPENAI_API_KEY'), 'tok-0');
    assert.equal(env.get('ANTHROPIC_API_KEY'), 'tok-0');
    assert.equal(env.get('ANTHROPIC_BASE_URL'), env.get('OPENAI_BASE_URL')!.replace(/\/v1$/, ''));
    assert.equal(env.get('PWD'), workdir);
  });

  void it('refuses an allow-list naming VOLT_* secrets, naming the field', async () => {
    const runner = new LocalRunner({ root, logs });
    const spec = specFor(['/bin/true'], { envAllowList: ['PATH', 'VOLT_S3_SECRET_KEY'] });
    await assert.rejects(
      runner.run(spec, new AbortController().signal),
      (e: unknown) => e instanceof ConfigError && e.issues.some((i) => i.path === 'envAllowList.1'),
    );
  });

  void it('calls prepareWorkdir before the agent, and a failing hook is infra_failed', async () => {
    const runner = new LocalRunner({ root, logs });
    const ok = await runner.run(specFor(['/bin/cat', 'seed.txt']), new AbortController().signal, {
      prepareWorkdir: async (dir) => {
        await writeFile(path.join(dir, 'seed.txt'), 'seeded before start');
      },
    });
    assert.equal(ok.outcome, 'succeeded');
    assert.equal((await s3.read(ok.stdoutKey)).toString(), 'seeded before start');
    const bad = await runner.run(specFor(['/bin/true']), new AbortController().signal, {
      prepareWorkdir: async () => {
        throw new Error('snapshot disk full');
      },
    });
    assert.equal(bad.outcome, 'infra_failed');
    assert.match(bad.detail ?? '', /snapshot disk full/);
  });

  void it('ignores a VOLT_OUTPUT_FILE that is a FIFO or a symlink instead of blocking on it or following it', async () => {
    const runner = new LocalRunner({ root, logs });
    const fifo = await runner.run(
      specFor(['/bin/sh', '-c', 'mkfifo "$VOLT_OUTPUT_FILE"']),
      new AbortController().signal,
    );
    assert.equal(fifo.outcome, 'succeeded');
    assert.equal(fifo.outputText, null);
    const link = await runner.run(
      specFor(['/bin/sh', '-c', 'ln -s /etc/passwd "$VOLT_OUTPUT_FILE"']),
      new AbortController().signal,
    );
    assert.equal(link.outputText, null);
  });

  void it('runs a venv Python agent in the sandbox even when its interpreter lives under the hidden home (pyenv)', async () => {
    const runner = new LocalRunner({ root, logs });
    const python = path.resolve('.venv/bin/python');
    const result = await runner.run(
      specFor([python, '-c', 'import json, os, sys; print(json.dumps([sys.prefix, os.getcwd()]))'], {
        ref: { runId: 'run-1', iteration: 0, rolloutId: 'py', attempt: 0 },
      }),
      new AbortController().signal,
    );
    assert.equal(result.outcome, 'succeeded', (await s3.read(result.stderrKey)).toString());
    const [prefix, cwd] = JSON.parse((await s3.read(result.stdoutKey)).toString()) as [string, string];
    assert.equal(prefix, path.resolve('.venv'));
    assert.equal(cwd, path.join(root, 'run-1', '000000', 'py', 'attempt-0', 'work'));
  });

  void it('gives each sandboxed attempt a fresh writable HOME inside its attempt directory', async () => {
    const runner = new LocalRunner({ root, logs });
    // What Claude Code and Codex do first: read, then write their config under ~.
    const script =
      'cat "$HOME/.codex/config.toml" 2>/dev/null && exit 3; mkdir -p "$HOME/.codex" && echo "model = \\"x\\"" > "$HOME/.codex/config.toml" && printf %s "$HOME" > "$VOLT_OUTPUT_FILE"';
    const homes = [];
    for (const attempt of [0, 1]) {
      const result = await runner.run(
        specFor(['/bin/sh', '-c', script], { ref: { runId: 'run-1', iteration: 0, rolloutId: 'home', attempt } }),
        new AbortController().signal,
      );
      assert.deepEqual([result.outcome, result.detail], ['succeeded', null]);
      homes.push(result.outputText);
    }
    assert.deepEqual(
      homes,
      [0, 1].map((a) => path.join(root, 'run-1', '000000', 'home', `attempt-${a}`, 'home')),
    );
  });

  void it('never runs more agents at once than its concurrency', async () => {
    const shared = await tempDir('shared');
    const runner = new LocalRunner({ root, logs, concurrency: 2 });
    const script = 'touch "running.$$"; ls running.* | wc -l >> counts; sleep 0.3; rm "running.$$"';
    const results = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) =>
        runner.run(
          specFor([], {
            ref: { runId: 'run-1', iteration: 0, rolloutId: `c-${i}`, attempt: 0 },
            agent: { command: ['/bin/sh', '-c', script], cwd: shared },
            // A token per attempt, as the launcher gives: the runner finds an attempt's escaped processes by its token,
            // so a shared one would let a slow pipe drain under load kill a sibling agent.
            gateway: { baseUrl: `http://127.0.0.1:9/r/tok-${i}/v1`, token: `tok-${i}` },
            // The agents share a directory outside their attempt dirs, which a sandbox would hide.
            sandbox: 'none',
          }),
          new AbortController().signal,
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => [r.outcome, r.detail]),
      Array(6).fill(['succeeded', null]),
    );
    const counts = (await readFile(path.join(shared, 'counts'), 'utf8')).trim().split('\n').map(Number);
    assert.equal(counts.length, 6);
    assert.ok(Math.max(...counts) <= 2, `saw ${Math.max(...counts)} agents at once`);
  });
});
