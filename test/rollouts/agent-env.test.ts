import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localAgentEnv } from '../../src/rollouts/agent-env.js';
import { rolloutSpecSchema } from '../../src/rollouts/spec.js';

const spec = (extra: Record<string, unknown> = {}) =>
  rolloutSpecSchema.parse({
    ref: { runId: 'r', iteration: 0, rolloutId: 'g0-r0', attempt: 0 },
    taskId: 't1',
    groupId: 'g0',
    mode: 'train',
    taskInput: { q: 1 },
    agent: { command: ['true'] },
    gateway: { baseUrl: 'http://127.0.0.1:8400/r/tok/v1', token: 'tok' },
    timeoutMs: 1000,
    ...extra,
  });

describe('agent environment', () => {
  it("sets the run config's variables, but never over the rollout contract's", () => {
    const env = localAgentEnv(
      spec({ env: { AGENT_TEMPERATURE: '0.7', OPENAI_API_KEY: 'stolen' } }),
      { PATH: '/bin', SECRET: 'x' },
      { taskFile: '/w/task.json', outputFile: '/w/out.txt' },
    );
    assert.equal(env.AGENT_TEMPERATURE, '0.7');
    assert.equal(env.OPENAI_API_KEY, 'tok');
    assert.equal(env.PATH, '/bin');
    assert.equal(env.SECRET, undefined);
    assert.deepEqual(JSON.parse(env.VOLT_TASK!), { id: 't1', input: { q: 1 } });
  });

  it('refuses VOLT_* names in the fixed variables', () => {
    assert.throws(() => spec({ env: { VOLT_S3_SECRET_KEY: 'x' } }), /VOLT_\* variables are never passed to agents/);
  });
});
