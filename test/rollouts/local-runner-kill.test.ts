import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { listProcesses, survivorsOf } from '../../src/rollouts/process-group.js';
import { agent, specFor, startLogStore, tempDir } from './fixtures.js';

/** Wait until the hang-fork agent wrote its four pids (three children, then itself). */
async function forkedPids(workdir: string): Promise<number[]> {
  for (let i = 0; i < 200; i++) {
    const text = await readFile(path.join(workdir, 'pids'), 'utf8').catch(() => '');
    const pids = text.trim().split('\n').filter(Boolean).map(Number);
    if (pids.length === 4) return pids;
    await sleep(25);
  }
  throw new Error('hang-fork agent never wrote its pids');
}

async function assertAllGone(pids: number[]): Promise<void> {
  const leader = pids[pids.length - 1] as number;
  assert.deepEqual(await survivorsOf(leader), [], 'a process of the agent group survived');
  const alive = (await listProcesses()).filter((p) => pids.includes(p.pid) && p.state !== 'Z');
  assert.deepEqual(alive, [], 'a forked child survived');
}

// These check the process-group reaping of unsandboxed agents (pids are read from the host's /proc); a sandboxed
// attempt is reaped by its pid namespace, checked in sandbox.test.ts.
void describe('LocalRunner stopping agents', () => {
  let root: string;
  let s3: Awaited<ReturnType<typeof startLogStore>>;
  void before(async () => {
    root = await tempDir('rollouts-kill');
    s3 = await startLogStore();
  });
  void after(() => s3.stop());

  void it('times out a hanging agent and kills every process it forked, even one ignoring SIGTERM', async () => {
    const runner = new LocalRunner({ root, logs: s3.sink, killGraceMs: 300 });
    const spec = specFor([agent('hang-fork.sh')], { timeoutMs: 1500, sandbox: 'none' });
    let pids: number[] = [];
    const result = await runner.run(spec, new AbortController().signal, {
      afterAgent: async (workdir) => (pids = await forkedPids(workdir)),
    });
    assert.equal(result.outcome, 'timed_out');
    assert.match(result.detail ?? '', /timed out after 1500 ms/);
    assert.match((await s3.read(result.stdoutKey)).toString(), /ready/);
    await assertAllGone(pids);
  });

  void it('abort kills the whole group and rejects with AbortError', async () => {
    const runner = new LocalRunner({ root, logs: s3.sink, killGraceMs: 300 });
    const spec = specFor([agent('hang-fork.sh')], {
      timeoutMs: 60_000,
      sandbox: 'none',
      ref: { runId: 'run-1', iteration: 0, rolloutId: 'abort-me', attempt: 0 },
    });
    const controller = new AbortController();
    const running = runner.run(spec, controller.signal);
    const workdir = path.join(root, 'run-1', '000000', 'abort-me', 'attempt-0', 'work');
    const pids = await forkedPids(workdir);
    const started = Date.now();
    controller.abort(new Error('iteration cancelled'));
    await assert.rejects(running, { name: 'AbortError', message: /iteration cancelled/ });
    assert.ok(Date.now() - started < 5000, 'abort took longer than the kill grace allows');
    await assertAllGone(pids);
  });

  void it('an agent that exits leaves no background child behind', async () => {
    const runner = new LocalRunner({ root, logs: s3.sink });
    const spec = specFor(['/bin/sh', '-c', 'sleep 600 & echo $! > bg; echo $$ >> bg'], {
      sandbox: 'none',
      ref: { runId: 'run-1', iteration: 0, rolloutId: 'bg', attempt: 0 },
    });
    let pids: number[] = [];
    const result = await runner.run(spec, new AbortController().signal, {
      afterAgent: async (workdir) =>
        (pids = (await readFile(path.join(workdir, 'bg'), 'utf8')).trim().split('\n').map(Number)),
    });
    assert.equal(result.outcome, 'succeeded');
    await assertAllGone(pids);
  });

  void it('kills a descendant that escaped the group with setsid but still holds the pipes', async () => {
    const runner = new LocalRunner({ root, logs: s3.sink, drainMs: 300 });
    const script = "setsid sh -c 'echo $$ > escaped; exec sleep 600' & sleep 0.2; echo started";
    const spec = specFor(['/bin/sh', '-c', script], {
      sandbox: 'none',
      ref: { runId: 'run-1', iteration: 0, rolloutId: 'escape', attempt: 0 },
    });
    let pid = 0;
    const result = await runner.run(spec, new AbortController().signal, {
      afterAgent: async (workdir) => (pid = Number((await readFile(path.join(workdir, 'escaped'), 'utf8')).trim())),
    });
    assert.equal(result.outcome, 'succeeded');
    assert.match(result.detail ?? '', new RegExp(`killed escaped processes .*\\b${pid}\\b`));
    await sleep(50);
    assert.deepEqual(
      (await listProcesses()).filter((p) => p.pid === pid && p.state !== 'Z'),
      [],
    );
  });

  void it('keeps head and tail of a 200 MiB stdout flood with bounded memory', async () => {
    const runner = new LocalRunner({
      root,
      logs: s3.sink,
      parentEnv: { ...process.env, FLOOD_BYTES: String(200 * 1024 * 1024) },
    });
    const spec = specFor([agent('flood.sh')], {
      envAllowList: ['PATH', 'FLOOD_BYTES'],
      ref: { runId: 'run-1', iteration: 0, rolloutId: 'flood', attempt: 0 },
    });
    global.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const result = await runner.run(spec, new AbortController().signal).finally(() => clearInterval(sampler));
    assert.equal(result.outcome, 'succeeded');
    const log = (await s3.read(result.stdoutKey)).toString();
    assert.ok(log.startsWith('FLOOD-START\nvolt flood line'), 'head kept');
    assert.ok(log.endsWith('\nFLOOD-END\n'), 'tail kept');
    assert.match(log, /\[volt: \d+ bytes truncated of 20971\d{4}\]/);
    assert.ok(log.length < 2 * 64 * 1024 + 100, `log is ${log.length} bytes`);
    const grewMiB = (peak - baseline) / 2 ** 20;
    assert.ok(grewMiB < 64, `RSS grew by ${grewMiB.toFixed(1)} MiB while 200 MiB streamed through`);
  });
});
