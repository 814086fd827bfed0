import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { closingRunner } from '../../src/rollouts/closing-runner.js';
import type { RolloutRunner } from '../../src/rollouts/spec.js';
import type { RunnerResult } from '../../src/contracts/rollout.js';

const spec = {
  ref: { runId: 'r', iteration: 0, rolloutId: 'g0-r0', attempt: 0 },
  taskId: 't',
  groupId: 'g0',
  mode: 'train' as const,
  taskInput: {},
  agent: { command: ['true'] },
  gateway: { baseUrl: 'http://127.0.0.1:1/r/x/v1', token: 'tok-1' },
  timeoutMs: 1000,
};

function finished(outcome: RunnerResult['outcome']): RolloutRunner {
  return {
    run: async (s) => ({
      ref: s.ref,
      taskId: s.taskId,
      groupId: s.groupId,
      sandbox: 'none',
      mode: 'train',
      outcome,
      exitCode: 1,
      signal: null,
      durationMs: 1,
      outputText: null,
      stdoutKey: 'a',
      stderrKey: 'b',
      detail: null,
      workdir: null,
    }),
  };
}

describe('closingRunner', () => {
  it("closes the attempt's token and keeps the outcome when the model answered every call", async () => {
    const closed: string[] = [];
    const runner = closingRunner(finished('agent_failed'), {
      close: async (t) => (closed.push(t), { spans: 2, upstreamFailures: 0 }),
    });
    const r = await runner.run(spec, new AbortController().signal);
    assert.equal(r.outcome, 'agent_failed');
    assert.deepEqual(closed, ['tok-1']);
  });

  it('closes the token of an attempt that was cancelled (run cancelled, activity retried), and rethrows', async () => {
    const closed: string[] = [];
    const cancelled: RolloutRunner = {
      run: async () => {
        throw new Error('rollout cancelled');
      },
    };
    const runner = closingRunner(cancelled, {
      close: async (t) => (closed.push(t), { spans: 0, upstreamFailures: 0 }),
    });
    await assert.rejects(runner.run(spec, new AbortController().signal), /rollout cancelled/);
    assert.deepEqual(closed, ['tok-1']);
  });

  it('turns an attempt whose model calls failed upstream into infra_failed, never an agent failure', async () => {
    const runner = closingRunner(finished('agent_failed'), { close: async () => ({ spans: 1, upstreamFailures: 1 }) });
    const r = await runner.run(spec, new AbortController().signal);
    assert.equal(r.outcome, 'infra_failed');
    assert.match(r.detail ?? '', /1 model call\(s\) failed upstream \(the agent then agent_failed\)/);
  });

  it('turns a timeout spent waiting on one model call (half the timeout or more) into infra_failed', async () => {
    const runner = closingRunner(finished('timed_out'), {
      close: async () => ({ spans: 0, upstreamFailures: 0, abandonedCallMs: 600 }),
    });
    const r = await runner.run(spec, new AbortController().signal);
    assert.equal(r.outcome, 'infra_failed');
    assert.match(r.detail ?? '', /model held its call for 600 ms/);
  });

  it('keeps timed_out for an agent whose last call was short (it looped, or worked between calls)', async () => {
    for (const abandonedCallMs of [undefined, 0, 499]) {
      const runner = closingRunner(finished('timed_out'), {
        close: async () => ({ spans: 9, upstreamFailures: 0, abandonedCallMs }),
      });
      assert.equal((await runner.run(spec, new AbortController().signal)).outcome, 'timed_out');
    }
  });

  it('a long abandoned call does not excuse an agent that was not killed for its timeout', async () => {
    const runner = closingRunner(finished('agent_failed'), {
      close: async () => ({ spans: 1, upstreamFailures: 0, abandonedCallMs: 900 }),
    });
    assert.equal((await runner.run(spec, new AbortController().signal)).outcome, 'agent_failed');
  });
});
