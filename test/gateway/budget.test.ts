import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { closingRunner } from '../../src/rollouts/closing-runner.js';
import type { Span } from '../../src/contracts/span.js';
import type { RolloutBudget } from '../../src/gateway/registry/budget.js';
import { readSpans } from '../../src/storage/spans.js';
import type { RolloutRunner } from '../../src/rollouts/spec.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, type RunningGateway } from './harness.js';
// The upstream is the FAKE scripted model server (test/gateway/scripted-upstream.ts): exact usage per answer.
import { COMPLETION, startScriptedGateway, stopScriptedGateway, type ScriptedUpstream } from './scripted-upstream.js';

let services: TestServices, store: ObjectStore, upstream: ScriptedUpstream, gw: RunningGateway;
before(async () => ({ services, store, upstream, gw } = await startScriptedGateway()));
after(() => stopScriptedGateway({ services, upstream, gw }));

const unbounded: RolloutBudget = {
  maxModelCalls: null,
  maxCompletionTokens: null,
  maxWallSec: null,
  maxTokensPerCall: 4096,
  maxChoicesPerCall: 4,
};

async function open(budget: Partial<RolloutBudget>) {
  const ref = rolloutInput();
  const { token, baseUrl } = await gw.admin.register({ ...ref, budget: { ...unbounded, ...budget } });
  // The agent side is the real OpenAI SDK, as an unmodified agent uses it (no retries, so each refusal is one call).
  const client = new OpenAI({ baseURL: baseUrl, apiKey: token, maxRetries: 0 });
  const ask = (extra: Record<string, unknown> = {}) =>
    client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], ...extra });
  return { token, ask, ref };
}

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof OpenAI.APIError, `expected an API error, got ${String(err)}`);
  return err;
};

describe('per-attempt budgets in the gateway', () => {
  it('refuses the call after maxModelCalls with a 429 in the OpenAI shape, and the attempt ends agent_failed (budget)', async () => {
    const r = await open({ maxModelCalls: 2 });
    const before = upstream.received.length;
    await r.ask();
    await r.ask();
    const err = await refusal(r.ask());
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rollout_budget_exceeded');
    assert.match(err.message, /rollout budget exhausted: 2 model calls used/);
    assert.equal(upstream.received.length - before, 2, 'the refused call never reached the model');
    const closed = await gw.admin.close(r.token);
    assert.equal(closed.budgetExceeded, '2 model calls used');
    // What the pipeline makes of it: an agent failure with reason budget, even though the agent exited 0.
    const succeeded: RolloutRunner = {
      run: async (s) => ({
        ref: s.ref,
        taskId: s.taskId,
        groupId: s.groupId,
        sandbox: 'none',
        mode: 'train',
        outcome: 'succeeded',
        exitCode: 0,
        signal: null,
        durationMs: 1,
        outputText: null,
        stdoutKey: 'a',
        stderrKey: 'b',
        detail: null,
        workdir: null,
      }),
    };
    const spec = {
      ref: { runId: 'r', iteration: 0, rolloutId: 'g0-r0', attempt: 0 },
      taskId: 't',
      groupId: 'g0',
      mode: 'train' as const,
      taskInput: {},
      agent: { command: ['true'] },
      gateway: { baseUrl: '', token: r.token },
      timeoutMs: 1000,
    };
    const result = await closingRunner(succeeded, gw.admin).run(spec, new AbortController().signal);
    assert.equal(result.outcome, 'agent_failed');
    assert.equal(result.detail, 'budget: 2 model calls used');
  });

  it('counts completion tokens and bounds each call to what is left', async () => {
    // Each scripted answer reports 3 completion tokens: 3 + 3 used of 7, so the third call may generate 1; then none is left.
    const r = await open({ maxCompletionTokens: 7 });
    await r.ask({ max_tokens: 100 });
    await r.ask();
    await r.ask({ max_tokens: 100 });
    assert.equal(upstream.received.at(-1)!.body.max_tokens, 1, 'the engine was asked for no more than the budget left');
    const err = await refusal(r.ask());
    assert.equal(err.status, 429);
    assert.match(err.message, /7 completion tokens used/);
    assert.equal(COMPLETION.length, 3);
  });

  it('clamps max_tokens above the per-call cap (and records it), rejects n above its cap with a 400 naming it', async () => {
    const r = await open({ maxTokensPerCall: 64, maxChoicesPerCall: 2 });
    await r.ask({ max_tokens: 64000 });
    assert.equal(upstream.received.at(-1)!.body.max_tokens, 64, 'clamped to the cap, not refused');
    const choices = await refusal(r.ask({ n: 3 }));
    assert.deepEqual([choices.status, choices.param], [400, 'n']);
    await r.ask({ max_tokens: 64, n: 2 });
    assert.equal(
      (await gw.admin.close(r.token)).budgetExceeded,
      undefined,
      'a rejected cap is a bad request, not an exhausted budget',
    );
    const spans: Span[] = [];
    for await (const s of readSpans(store, r.ref)) spans.push(s);
    assert.deepEqual(
      spans.map((s) => s.translation),
      [["max_tokens 64000 clamped to 64: the rollout's per-call cap"], []],
    );
  });

  it('refuses calls after maxWallSec', async () => {
    const r = await open({ maxWallSec: 1 });
    await r.ask();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const err = await refusal(r.ask());
    assert.equal(err.status, 429);
    assert.match(err.message, /wall time 1 s used/);
  });

  it('keeps counting across a gateway restart: the calls and tokens used before it still count', async () => {
    const first = await startGateway(store, services.dataDir, upstream.url);
    let second: RunningGateway | null = null;
    try {
      const budget = { ...unbounded, maxModelCalls: 4, maxCompletionTokens: 7 };
      const { token, baseUrl } = await first.admin.register({ ...rolloutInput(), budget });
      let client = new OpenAI({ baseURL: baseUrl, apiKey: token, maxRetries: 0 });
      const ask = () => client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
      await ask();
      await ask();
      // A graceful restart: the spans are in S3, the registry file still says what it said at registration.
      await first.close();
      second = await startGateway(store, services.dataDir, upstream.url, { dataDir: first.dataDir });
      client = new OpenAI({ baseURL: `${second.url}${new URL(baseUrl).pathname}`, apiKey: token, maxRetries: 0 });
      await ask();
      assert.equal(
        upstream.received.at(-1)!.body.max_tokens,
        1,
        '3 + 3 of 7 completion tokens were used before the restart',
      );
      const err = await refusal(ask());
      assert.equal(err.status, 429);
      assert.match(err.message, /7 completion tokens used/);
    } finally {
      await second?.close();
      await first.close().catch(() => undefined);
    }
  });

  it('refuses an upstream answer larger than the byte bound instead of buffering it (JSON and streams)', async () => {
    const small = await startGateway(store, services.dataDir, upstream.url, {
      upstream: { retryBaseMs: 5, retryMaxMs: 50, maxResponseBytes: 100 },
    });
    try {
      const { token, baseUrl } = await small.admin.register(rolloutInput());
      const client = new OpenAI({ baseURL: baseUrl, apiKey: token, maxRetries: 0 });
      const messages = [{ role: 'user' as const, content: 'hi' }];
      const err = await refusal(client.chat.completions.create({ model: 'x', messages }));
      assert.equal(err.status, 502);
      assert.equal(err.code, 'upstream_response_too_large');
      assert.match(err.message, /larger than 100 bytes/);
      const stream = await client.chat.completions.create({ model: 'x', messages, stream: true });
      await assert.rejects(async () => {
        for await (const chunk of stream) void chunk;
      }, /larger than 100 bytes/);
      // Both count against the attempt as model-side failures: it is retried, never scored as the agent's.
      assert.equal((await small.admin.close(token)).upstreamFailures, 2);
    } finally {
      await small.close();
    }
  });
});
