import assert from 'node:assert/strict';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ProcessOutcome } from '../../src/rewards/run-process.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import type { RolloutSpecInput } from '../../src/rollouts/spec.js';
import { agent, specFor, startLogStore, tempDir } from './fixtures.js';

const HIDDEN = `VOLT-HIDDEN-TEST ${process.pid}`;

/**
 * The scoring step of a real bubblewrap attempt: the task's hidden files appear only after the agent exited (an
 * agent hunting for them finds nothing, and the symlink it planted on their path is not followed), and the check
 * runs in the attempt's sandbox (the operator's home is hidden from it), unlike with sandbox 'none'.
 */
void describe('scoring inside the sandbox, after the agent exits', () => {
  let logs: Awaited<ReturnType<typeof startLogStore>>;
  let root: string;
  let outside: string;
  let runner: LocalRunner;
  const homeFile = path.join(homedir(), `.volt-scoring-test-${process.pid}`);

  void before(async () => {
    logs = await startLogStore();
    root = await tempDir('scoring-rollouts');
    outside = await tempDir('scoring-outside');
    runner = new LocalRunner({ root, logs: logs.sink });
    await writeFile(homeFile, 'operator secret');
  });
  void after(async () => {
    await runner.close();
    await logs.stop();
    await Promise.all([
      rm(root, { recursive: true, force: true }),
      rm(outside, { recursive: true, force: true }),
      rm(homeFile, { force: true }),
    ]);
  });

  async function score(rolloutId: string, over: Partial<RolloutSpecInput>) {
    const checks: Record<string, ProcessOutcome> = {};
    const spec = specFor([agent('look-for-hidden.sh')], {
      ref: { runId: 'run-1', iteration: 0, rolloutId, attempt: 0 },
      taskInput: { linkTo: outside },
      hiddenFiles: { 'hidden/check.txt': HIDDEN, 'tests/hidden/test_x.py': '# VOLT-HIDDEN-TEST\n' },
      ...over,
    });
    const result = await runner.run(spec, new AbortController().signal, {
      afterAgent: async (workdir, _result, exec) => {
        const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
        checks.hidden = await exec(['cat', 'hidden/check.txt'], { timeoutMs: 20_000, env });
        checks.home = await exec(['cat', homeFile], { timeoutMs: 20_000, env });
        checks.cwd = await exec(['pwd'], { timeoutMs: 20_000, env });
        assert.equal(checks.cwd.stdout.trim(), workdir);
      },
    });
    return { result, checks };
  }

  void it("the agent finds no hidden file; the sandboxed check sees them and not the operator's home", async () => {
    const { result, checks } = await score('sandboxed', {});
    assert.equal(result.outcome, 'succeeded', result.detail ?? '');
    assert.equal(result.outputText?.trim(), 'found:nothing');
    assert.equal(checks.hidden?.stdout, HIDDEN, checks.hidden?.stderr);
    assert.notEqual(checks.home?.exitCode, 0, "the operator's home is hidden from the check");
    assert.match(checks.home?.stderr ?? '', /No such file/);
    // The planted symlink was replaced, not written through.
    assert.deepEqual(await readdir(outside), []);
  });

  void it('with sandbox "none" the same check reads the operator\'s home (so the test above can fail)', async () => {
    const { result, checks } = await score('unsandboxed', { sandbox: 'none' });
    assert.equal(result.outcome, 'succeeded', result.detail ?? '');
    assert.equal(result.outputText?.trim(), 'found:nothing');
    assert.equal(checks.hidden?.stdout, HIDDEN);
    assert.equal(checks.home?.stdout, 'operator secret');
    assert.deepEqual(await readdir(outside), []);
  });

  void it('a missing check program rejects the scoring step (reward infra), never a score', async () => {
    const spec = specFor(['/bin/true'], { ref: { runId: 'run-1', iteration: 0, rolloutId: 'missing', attempt: 0 } });
    await assert.rejects(
      runner.run(spec, new AbortController().signal, {
        afterAgent: (_w, _r, exec) => exec(['no-such-check-program'], { timeoutMs: 5000 }),
      }),
      /ENOENT/,
    );
  });
});
