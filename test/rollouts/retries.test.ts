import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { runWithRetries } from '../../src/rollouts/retries.js';
import { agent, specFor, startLogStore, tempDir } from './fixtures.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';

void describe('runWithRetries', () => {
  let runner: LocalRunner;
  let s3: Awaited<ReturnType<typeof startLogStore>>;
  const registered: RolloutRef[] = [];
  const register = async (ref: RolloutRef) => {
    registered.push(ref);
    const token = `tok-${ref.rolloutId}-${ref.attempt}`;
    return { baseUrl: `http://127.0.0.1:9/r/${token}/v1`, token };
  };
  void before(async () => {
    s3 = await startLogStore();
    runner = new LocalRunner({ root: await tempDir('retries'), logs: s3.sink });
  });
  void after(() => s3.stop());

  void it('retries a missing command as new attempts, each with a newly registered token', async () => {
    registered.length = 0;
    const spec = specFor(['/nonexistent/agent-binary'], {
      ref: { runId: 'run-1', iteration: 2, rolloutId: 'missing', attempt: 0 },
    });
    const results = await runWithRetries(runner, spec, {
      maxAttempts: 3,
      register,
      signal: new AbortController().signal,
    });
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['infra_failed', 'infra_failed', 'infra_failed'],
    );
    assert.deepEqual(
      results.map((r) => r.ref.attempt),
      [0, 1, 2],
    );
    assert.match(results[0]?.detail ?? '', /spawn \/nonexistent\/agent-binary failed: .*ENOENT/);
    assert.deepEqual(
      registered.map((r) => r.attempt),
      [0, 1, 2],
    );
    assert.deepEqual(
      results.map((r) => r.stdoutKey),
      [0, 1, 2].map((a) => `runs/run-1/iterations/000002/rollouts/missing/attempt-00${a}/stdout.log`),
    );
  });

  void it('stops at the first attempt that is not infra_failed', async () => {
    registered.length = 0;
    const spec = specFor(['/bin/sh', '-c', 'exit 3'], {
      ref: { runId: 'run-1', iteration: 2, rolloutId: 'fails', attempt: 0 },
    });
    const results = await runWithRetries(runner, spec, {
      maxAttempts: 3,
      register,
      signal: new AbortController().signal,
    });
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['agent_failed'],
    );
    assert.equal(registered.length, 1);
  });

  void it('a retried attempt can succeed: attempt 0 infra_failed, attempt 1 succeeded with its own token', async () => {
    registered.length = 0;
    // prepareWorkdir fails once (a real infra fault: the workdir cannot be prepared), then works.
    let calls = 0;
    const spec = specFor([agent('print-env.sh')], {
      ref: { runId: 'run-1', iteration: 2, rolloutId: 'flaky', attempt: 0 },
    });
    const results = await runWithRetries(runner, spec, {
      maxAttempts: 3,
      register,
      signal: new AbortController().signal,
      prepareWorkdir: async () => {
        if (calls++ === 0) throw new Error('disk not mounted yet');
      },
    });
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['infra_failed', 'succeeded'],
    );
    assert.match((await s3.read(results[1]?.stdoutKey as string)).toString(), /^OPENAI_API_KEY=tok-flaky-1$/m);
  });

  void it('rejects a bad maxAttempts and stops when aborted', async () => {
    const spec = specFor(['/bin/true']);
    await assert.rejects(
      runWithRetries(runner, spec, { maxAttempts: 0, register, signal: new AbortController().signal }),
      RangeError,
    );
    await assert.rejects(runWithRetries(runner, spec, { maxAttempts: 2, register, signal: AbortSignal.abort() }), {
      name: 'AbortError',
    });
  });
});
