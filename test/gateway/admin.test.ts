import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GatewayAdminClient, GatewayAdminError } from '../../src/gateway/admin-client.js';
import { keys } from '../../src/storage/keys.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, type RunningGateway } from './harness.js';
// The upstream is the FAKE scripted model server (test/gateway/scripted-upstream.ts).
import { startScriptedGateway, stopScriptedGateway, type ScriptedUpstream } from './scripted-upstream.js';
import { agentRewardsFileSchema } from '../../src/contracts/rewards.js';

let services: TestServices, store: ObjectStore, upstream: ScriptedUpstream, gw: RunningGateway;
before(
  async () =>
    ({ services, store, upstream, gw } = await startScriptedGateway({ pauseWaitMs: 300, pauseRetryAfterS: 2 })),
);
after(() => stopScriptedGateway({ services, upstream, gw }));

const chatBody = JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] });
const post = (url: string, body = chatBody) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

void describe('gateway admin API', () => {
  void it('registers idempotently with a 32-byte base64url token and lists the policy model', async () => {
    const input = rolloutInput({ policyModel: 'policy-b' });
    const first = await gw.admin.register(input);
    assert.match(first.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(first.created, true);
    const again = await gw.admin.register(input);
    assert.equal(again.token, first.token);
    assert.equal(again.created, false);
    const other = await gw.admin.register({ ...input, attempt: 1 });
    assert.notEqual(other.token, first.token);
    const models = (await (await fetch(`${first.baseUrl}/models`)).json()) as { data: { id: string }[] };
    assert.deepEqual(
      models.data.map((m) => m.id),
      ['policy-b'],
    );
    const info = await gw.admin.get(first.token);
    assert.equal(info.status, 'open');
    assert.equal(info.rolloutId, input.rolloutId);
    assert.equal('token' in info, false);
  });

  void it('rejects a wrong admin key and bad registrations, naming the field', async () => {
    const wrong = new GatewayAdminClient(gw.url, 'not-the-key-at-all');
    await assert.rejects(wrong.register(rolloutInput()), (e: GatewayAdminError) => e.status === 401);
    await assert.rejects(
      gw.admin.register(rolloutInput({ iteration: -1 })),
      (e: GatewayAdminError) => e.status === 400 && /iteration/.test(e.message),
    );
    await assert.rejects(
      gw.admin.register(rolloutInput({ rolloutId: '../escape' })),
      (e: GatewayAdminError) => e.status === 400 && /rollout/.test(e.message),
    );
  });

  void it('close waits for in-flight calls, counts spans, and then refuses the token', async () => {
    const input = rolloutInput();
    const { token, baseUrl } = await gw.admin.register(input);
    upstream.script.push({ kind: 'json', delayMs: 300 });
    const slow = post(`${baseUrl}/chat/completions`);
    await new Promise((r) => setTimeout(r, 50));
    const closed = await gw.admin.close(token);
    assert.equal((await slow).status, 200, 'the in-flight call completed');
    assert.deepEqual(closed, { spans: 1, upstreamFailures: 0 });
    const seqs: number[] = [];
    for await (const s of readSpans(store, input)) seqs.push(s.seq);
    assert.deepEqual(seqs, [0]);
    assert.equal((await post(`${baseUrl}/chat/completions`)).status, 401);
    assert.deepEqual(await gw.admin.close(token), { spans: 1, upstreamFailures: 0 }, 'close is idempotent');
    await assert.rejects(gw.admin.register(input), (e: GatewayAdminError) => e.status === 409);
    assert.equal((await gw.admin.get(token)).status, 'closed');
  });

  void it('pause holds new calls up to a bound, then 429 with Retry-After; resume lets waiting calls through', async () => {
    const { baseUrl } = await gw.admin.register(rolloutInput());
    await gw.admin.pause();
    const refused = await post(`${baseUrl}/chat/completions`);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '2');
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'gateway_paused');
    const waiting = post(`${baseUrl}/chat/completions`);
    await new Promise((r) => setTimeout(r, 100));
    await gw.admin.resume();
    assert.equal((await waiting).status, 200);
  });

  void it('drain waits for in-flight calls and uploads', async () => {
    const { baseUrl } = await gw.admin.register(rolloutInput());
    upstream.script.push({ kind: 'json', delayMs: 200 });
    const slow = post(`${baseUrl}/chat/completions`);
    await new Promise((r) => setTimeout(r, 50));
    const drained = await gw.admin.drain();
    assert.deepEqual(drained, { paused: true, inFlight: 0, pendingUploads: 0 });
    assert.equal((await slow).status, 200);
    await gw.admin.resume();
  });

  void it('stores agent rewards durably, appending', async () => {
    const input = rolloutInput();
    const { token, baseUrl } = await gw.admin.register(input);
    const rewardUrl = baseUrl.replace(/\/v1$/, '/reward');
    const results = await Promise.all([
      post(rewardUrl, JSON.stringify({ value: 1 })),
      post(rewardUrl, JSON.stringify({ value: 0.5, name: 'tests' })),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      [200, 200],
    );
    const stored = await store.getJson(keys.agentRewards(input), agentRewardsFileSchema);
    assert.deepEqual(stored.rewards.map((r) => r.value).sort(), [0.5, 1]);
    // A turn reward names its call by seq; it is stored with it.
    assert.equal((await post(rewardUrl, JSON.stringify({ value: 2, span: 3 }))).status, 200);
    const turns = await store.getJson(keys.agentRewards(input), agentRewardsFileSchema);
    assert.deepEqual(
      turns.rewards.filter((r) => r.span !== undefined).map((r) => [r.span, r.value]),
      [[3, 2]],
    );
    const badSpan = await post(rewardUrl, JSON.stringify({ value: 1, span: -1 }));
    assert.equal(((await badSpan.json()) as { error: { param: string } }).error.param, 'span');
    const bad = await post(rewardUrl, JSON.stringify({ value: 'high' }));
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'value');
    await gw.admin.close(token);
    assert.equal((await post(rewardUrl, JSON.stringify({ value: 1 }))).status, 401);
  });

  void it('serves /healthz and prometheus /metrics', async () => {
    const health = (await (await fetch(`${gw.url}/healthz`)).json()) as { ok: boolean };
    assert.equal(health.ok, true);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    for (const name of [
      'volt_gateway_requests_total',
      'volt_gateway_request_duration_seconds',
      'volt_gateway_spans_pending_upload',
      'volt_gateway_wal_bytes',
      'volt_gateway_prompt_tokens_total',
    ]) {
      assert.ok(metrics.includes(name), name);
    }
    assert.match(
      metrics,
      /volt_gateway_requests_total\{route="\/r\/:token\/v1\/chat\/completions",status="200"\} [1-9]/,
    );
  });
});
