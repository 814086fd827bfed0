import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { request } from 'undici';
import { chatRequestSchema } from '../../src/gateway/request-schema.js';
import { keys } from '../../src/storage/keys.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, startStore, type RunningGateway } from './harness.js';
import { startScriptedUpstream } from './scripted-upstream.js';

let services: TestServices;
let store: ObjectStore;
let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
let gw: RunningGateway;
let token: string;
const input = rolloutInput();

before(async () => {
  ({ services, store } = await startStore());
  upstream = await startScriptedUpstream();
  gw = await startGateway(store, services.dataDir, upstream.url, { bodyLimit: 64 * 1024 });
  ({ token } = await gw.admin.register(input));
});
after(async () => {
  await gw?.close();
  await upstream?.close();
  await services?.stop();
});

async function send(method: string, urlPath: string, body: string | undefined, contentType = 'application/json') {
  const res = await request(`${gw.url}${urlPath}`, { method: method as 'POST', headers: body === undefined ? {} : { 'content-type': contentType }, body });
  const text = await res.body.text();
  return { status: res.statusCode, text, json: safeJson(text) as { error?: { message: unknown; type: unknown; param: unknown; code: unknown } } | undefined };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function assertOpenAIError(r: Awaited<ReturnType<typeof send>>, status: number | null): void {
  if (status !== null) assert.equal(r.status, status, r.text);
  assert.ok(r.status >= 400 && r.status < 500, `client fault answered ${r.status}: ${r.text}`);
  const e = r.json?.error;
  assert.ok(e && typeof e.message === 'string' && typeof e.type === 'string' && 'param' in e && 'code' in e, `not the OpenAI error shape: ${r.text}`);
}

const chatPath = () => `/r/${token}/v1/chat/completions`;
const good = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

void describe('gateway bad input', () => {
  void it('answers each client fault with the right 4xx in the OpenAI shape, naming the field', async () => {
    assertOpenAIError(await send('POST', `/r/not-a-token/v1/chat/completions`, JSON.stringify(good)), 401);
    assertOpenAIError(await send('POST', chatPath(), '{"model": "m", "messages": ['), 400);
    assertOpenAIError(await send('POST', chatPath(), JSON.stringify({ ...good, content: 'x'.repeat(70 * 1024) })), 413);
    assertOpenAIError(await send('POST', chatPath(), 'model=m', 'application/x-www-form-urlencoded'), 415);
    assertOpenAIError(await send('GET', `/r/${token}/v1/nothing-here`, undefined), 404);
    const cases: [unknown, string][] = [
      [{ ...good, messages: [] }, 'messages'],
      [{ ...good, messages: 'hi' }, 'messages'],
      [{ ...good, messages: [{ content: 'no role' }] }, 'messages.0.role'],
      [{ ...good, model: 7 }, 'model'],
      [{ ...good, stream: 'yes' }, 'stream'],
      [{ messages: good.messages }, 'model'],
    ];
    for (const [body, param] of cases) {
      const r = await send('POST', chatPath(), JSON.stringify(body));
      assertOpenAIError(r, 400);
      assert.equal(r.json!.error!.param, param);
    }
    assertOpenAIError(await send('POST', chatPath(), '[1,2,3]'), 400);
    assertOpenAIError(await send('POST', chatPath(), '{"__proto__": {"x": 1}, "model": "m"}'), 400);
  });

  void it('survives 2,000 random malformed requests: zero 5xx, zero upstream calls, zero spans', async () => {
    const invalidJsonValue = fc.jsonValue().filter((v) => !chatRequestSchema.safeParse(v).success);
    const brokenGood = fc.record({
      field: fc.constantFrom('model', 'messages', 'stream', 'n', 'logprobs', 'stream_options'),
      value: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer()), fc.object()),
    }).filter(({ field, value }) => !chatRequestSchema.safeParse({ ...good, [field]: value }).success)
      .map(({ field, value }) => JSON.stringify({ ...good, [field]: value }));
    const body = fc.oneof(
      invalidJsonValue.map((v) => JSON.stringify(v)),
      brokenGood,
      fc.string({ maxLength: 200 }),
      fc.json().map((j) => j.slice(0, Math.max(1, j.length - 1)) + '{'),
    );
    const urlPath = fc.oneof(
      fc.constant(chatPath()),
      fc.constant(`/r/${token}/v1/completions`),
      fc.constant(`/r/${token}/reward`),
      fc.string({ maxLength: 40 }).map((s) => `/r/${encodeURIComponent(s)}/v1/chat/completions`),
      fc.webPath().map((p) => p || '/x'),
    );
    const contentType = fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/octet-stream');
    const samples = fc.sample(fc.tuple(fc.constantFrom('POST', 'POST', 'PUT', 'GET', 'DELETE'), urlPath, body, contentType), { numRuns: 2000, seed: 4242 });
    const started = Date.now();
    const statuses = new Map<number, number>();
    for (let i = 0; i < samples.length && Date.now() - started < 60_000; i += 16) {
      const results = await Promise.all(samples.slice(i, i + 16).map(([m, p, b, ct]) => send(m, p, m === 'GET' ? undefined : b, ct)));
      for (const r of results) {
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        assert.ok(r.status < 500, `5xx for a client fault: ${r.status} ${r.text}`);
        if (r.status >= 400) assertOpenAIError(r, null);
      }
    }
    assert.equal([...statuses.values()].reduce((a, b) => a + b, 0), 2000, 'all requests ran within the time bound');
    assert.equal(upstream.received.length, 0, 'nothing reached the model server');
    assert.equal((await send('GET', '/healthz', undefined)).status, 200);
    const spans = [];
    for await (const o of store.list(keys.spans(input))) spans.push(o.key);
    assert.deepEqual(spans, []);
    const wal = path.join(gw.dataDir, 'gateway', 'wal');
    assert.deepEqual(fs.existsSync(wal) ? fs.readdirSync(wal) : [], []);
  });
});
