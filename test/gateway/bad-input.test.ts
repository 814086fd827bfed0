import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { request } from 'undici';
import { messagesRequestSchema } from '../../src/gateway/agent-apis/messages-request.js';
import { responsesRequestSchema } from '../../src/gateway/agent-apis/responses-request.js';
import { chatRequestSchema } from '../../src/gateway/routes/request-schema.js';
import { keys } from '../../src/storage/keys.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, startStore, type RunningGateway } from './harness.js';
// The upstream is the FAKE scripted model server (test/gateway/scripted-upstream.ts).
import { startScriptedUpstream } from './scripted-upstream.js';

let services: TestServices;
let store: ObjectStore;
let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
let gw: RunningGateway;
let token: string;
let otherToken: string;
const input = rolloutInput();
const other = rolloutInput();

before(async () => {
  ({ services, store } = await startStore());
  upstream = await startScriptedUpstream();
  gw = await startGateway(store, services.dataDir, upstream.url, { bodyLimit: 64 * 1024 });
  ({ token } = await gw.admin.register(input));
  ({ token: otherToken } = await gw.admin.register(other));
});
after(async () => {
  await gw?.close();
  await upstream?.close();
  await services?.stop();
});

async function send(
  method: string,
  urlPath: string,
  body: string | undefined,
  contentType = 'application/json',
  headers: Record<string, string> = {},
) {
  const res = await request(`${gw.url}${urlPath}`, {
    method: method as 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': contentType }), ...headers },
    body,
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    path: urlPath,
    text,
    json: safeJson(text) as
      { type?: unknown; error?: { message: unknown; type: unknown; param: unknown; code: unknown } } | undefined,
  };
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
  assert.ok(
    e && typeof e.message === 'string' && typeof e.type === 'string' && 'param' in e && 'code' in e,
    `not the OpenAI error shape: ${r.text}`,
  );
}

/** The Messages API's own error shape: `{"type":"error","error":{"type","message"}}`. */
function assertAnthropicError(r: Awaited<ReturnType<typeof send>>, status: number | null, type?: string): void {
  if (status !== null) assert.equal(r.status, status, r.text);
  assert.ok(r.status >= 400 && r.status < 500, `client fault answered ${r.status}: ${r.text}`);
  const e = r.json?.error;
  assert.ok(
    r.json?.type === 'error' && e && typeof e.message === 'string' && typeof e.type === 'string',
    `not the Anthropic error shape: ${r.text}`,
  );
  if (type) assert.equal(e.type, type);
}

const assertApiError = (r: Awaited<ReturnType<typeof send>>, status: number | null) =>
  /^\/r\/[^/?]*\/v1\/messages(?:[/?]|$)/.test(r.path) ? assertAnthropicError(r, status) : assertOpenAIError(r, status);

const chatPath = () => `/r/${token}/v1/chat/completions`;
const responsesPath = () => `/r/${token}/v1/responses`;
const messagesPath = () => `/r/${token}/v1/messages`;
const goodResponses = { model: 'm', input: 'hi' };
const goodMessages = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
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

  void it('Responses API: 400/401/404/413 in the OpenAI shape, naming the field; unsupported features refused by name', async () => {
    assertOpenAIError(await send('POST', '/r/not-a-token/v1/responses', JSON.stringify(goodResponses)), 401);
    // A bearer key of another rollout on this rollout's URL is refused: no span may land in either.
    assertOpenAIError(
      await send('POST', responsesPath(), JSON.stringify(goodResponses), 'application/json', {
        authorization: `Bearer ${otherToken}`,
      }),
      401,
    );
    assertOpenAIError(await send('POST', responsesPath(), '{"model": "m", "input": ['), 400);
    assertOpenAIError(
      await send('POST', responsesPath(), JSON.stringify({ ...goodResponses, input: 'x'.repeat(70 * 1024) })),
      413,
    );
    assertOpenAIError(await send('GET', `/r/${token}/v1/responses/resp_123`, undefined), 404);
    const cases: [unknown, string][] = [
      [{ input: 'hi' }, 'model'],
      [{ model: 'm' }, 'input'],
      [{ ...goodResponses, input: 7 }, 'input'],
      [{ ...goodResponses, max_output_tokens: -1 }, 'max_output_tokens'],
      [{ ...goodResponses, tools: [{ type: 'function' }] }, 'tools.0.name'],
      [{ ...goodResponses, include: 'x' }, 'include'],
      [{ ...goodResponses, background: true }, 'background'],
      [{ ...goodResponses, previous_response_id: 'resp_1' }, 'previous_response_id'],
      [{ model: 'm', input: [{ type: 'function_call_output' }] }, 'input.0.call_id'],
    ];
    for (const [body, param] of cases) {
      const r = await send('POST', responsesPath(), JSON.stringify(body));
      assertOpenAIError(r, 400);
      assert.equal(r.json!.error!.param, param, r.text);
    }
  });

  void it("Messages API: 400/401/404/413 in Anthropic's shape with the SDKs' error types", async () => {
    assertAnthropicError(
      await send('POST', '/r/not-a-token/v1/messages', JSON.stringify(goodMessages)),
      401,
      'authentication_error',
    );
    assertAnthropicError(
      await send('POST', messagesPath(), JSON.stringify(goodMessages), 'application/json', { 'x-api-key': otherToken }),
      401,
      'authentication_error',
    );
    assertAnthropicError(
      await send('POST', messagesPath(), '{"model": "m", "messages": ['),
      400,
      'invalid_request_error',
    );
    assertAnthropicError(
      await send('POST', messagesPath(), JSON.stringify({ ...goodMessages, system: 'x'.repeat(70 * 1024) })),
      413,
      'request_too_large',
    );
    assertAnthropicError(await send('POST', messagesPath(), 'model=m', 'application/x-www-form-urlencoded'), 415);
    assertAnthropicError(
      await send('POST', `/r/${token}/v1/messages/batches`, JSON.stringify(goodMessages)),
      404,
      'not_found_error',
    );
    assertAnthropicError(
      await send('POST', '/r/not-a-token/v1/messages/count_tokens', JSON.stringify(goodMessages)),
      401,
      'authentication_error',
    );
    assertAnthropicError(
      await send('POST', `/r/${token}/v1/messages/count_tokens`, JSON.stringify({ model: 'm', messages: [] })),
      400,
      'invalid_request_error',
    );
    const cases: [unknown, string][] = [
      [{ model: 'm', messages: goodMessages.messages }, 'max_tokens'],
      [{ ...goodMessages, messages: [] }, 'messages'],
      [{ ...goodMessages, messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role'],
      [{ ...goodMessages, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools.0.type'],
      [{ ...goodMessages, thinking: { type: 'sometimes' } }, 'thinking.type'],
      [
        { ...goodMessages, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] },
        'messages.0.content.0.type',
      ],
      [
        { ...goodMessages, messages: [{ role: 'user', content: [{ type: 'tool_result' }] }] },
        'messages.0.content.0.tool_use_id',
      ],
      [
        { ...goodMessages, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', input: {} }] }] },
        'messages.0.content.0.name',
      ],
    ];
    for (const [body, param] of cases) {
      const r = await send('POST', messagesPath(), JSON.stringify(body));
      assertAnthropicError(r, 400, 'invalid_request_error');
      assert.match(String(r.json!.error!.message), new RegExp(param.replace(/\./g, '\\.')), r.text);
    }
    assert.equal(upstream.received.length, 0, 'nothing reached the model server');
  });

  void it('survives 2,000 random malformed requests: zero 5xx, zero upstream calls, zero spans', async () => {
    const invalidJsonValue = fc
      .jsonValue()
      .filter(
        (v) => ![chatRequestSchema, responsesRequestSchema, messagesRequestSchema].some((s) => s.safeParse(v).success),
      );
    const brokenGood = fc
      .record({
        field: fc.constantFrom('model', 'messages', 'stream', 'n', 'logprobs', 'stream_options'),
        value: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer()), fc.object()),
      })
      .filter(({ field, value }) => !chatRequestSchema.safeParse({ ...good, [field]: value }).success)
      .map(({ field, value }) => JSON.stringify({ ...good, [field]: value }));
    const brokenResponses = fc
      .record({
        field: fc.constantFrom('model', 'input', 'instructions', 'tools', 'max_output_tokens', 'stream', 'metadata'),
        value: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer()), fc.object()),
      })
      .filter(({ field, value }) => !responsesRequestSchema.safeParse({ ...goodResponses, [field]: value }).success)
      .map(({ field, value }) => JSON.stringify({ ...goodResponses, [field]: value }));
    const brokenMessages = fc
      .record({
        field: fc.constantFrom(
          'model',
          'max_tokens',
          'messages',
          'system',
          'tools',
          'stop_sequences',
          'stream',
          'temperature',
        ),
        value: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer()), fc.object()),
      })
      .filter(({ field, value }) => !messagesRequestSchema.safeParse({ ...goodMessages, [field]: value }).success)
      .map(({ field, value }) => JSON.stringify({ ...goodMessages, [field]: value }));
    const body = fc.oneof(
      invalidJsonValue.map((v) => JSON.stringify(v)),
      brokenGood,
      fc.string({ maxLength: 200 }),
      fc.json().map((j) => j.slice(0, Math.max(1, j.length - 1)) + '{'),
    );
    const urlPath = fc.oneof(
      fc.constant(chatPath()),
      fc.constant(`/r/${token}/v1/completions`),
      fc.string({ maxLength: 40 }).map((s) => `/r/${encodeURIComponent(s)}/v1/messages`),
      fc.constant(`/r/${token}/reward`),
      fc.string({ maxLength: 40 }).map((s) => `/r/${encodeURIComponent(s)}/v1/chat/completions`),
      fc.webPath().map((p) => p || '/x'),
    );
    const contentType = fc.constantFrom(
      'application/json',
      'application/json',
      'text/plain',
      'application/octet-stream',
    );
    // A body broken for one API may be fine for another (chat only checks what it reads), so each goes to its own path.
    const method = fc.constantFrom('POST', 'POST', 'PUT', 'GET', 'DELETE');
    const samples = fc.sample(
      fc.oneof(
        fc.tuple(method, urlPath, body, contentType),
        fc.tuple(method, fc.constant(responsesPath()), fc.oneof(brokenResponses, body), contentType),
        fc.tuple(method, fc.constant(messagesPath()), fc.oneof(brokenMessages, body), contentType),
      ),
      { numRuns: 2000, seed: 4242 },
    );
    const started = Date.now();
    const statuses = new Map<number, number>();
    for (let i = 0; i < samples.length && Date.now() - started < 60_000; i += 16) {
      const results = await Promise.all(
        samples.slice(i, i + 16).map(([m, p, b, ct]) => send(m, p, m === 'GET' ? undefined : b, ct)),
      );
      for (const r of results) {
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        assert.ok(r.status < 500, `5xx for a client fault: ${r.status} ${r.text}`);
        if (r.status >= 400) assertApiError(r, null);
      }
    }
    assert.equal(
      [...statuses.values()].reduce((a, b) => a + b, 0),
      2000,
      'all requests ran within the time bound',
    );
    assert.equal(
      upstream.received.length,
      0,
      `nothing reached the model server: ${JSON.stringify(upstream.received).slice(0, 2000)}`,
    );
    assert.equal((await send('GET', '/healthz', undefined)).status, 200);
    const spans = [];
    for await (const o of store.list(keys.spans(input))) spans.push(o.key);
    for await (const o of store.list(keys.spans(other))) spans.push(o.key);
    assert.deepEqual(spans, []);
    const wal = path.join(gw.dataDir, 'gateway', 'wal');
    assert.deepEqual(fs.existsSync(wal) ? fs.readdirSync(wal) : [], []);
  });
});
