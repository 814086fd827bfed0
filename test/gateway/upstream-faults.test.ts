import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Span } from '../../src/contracts/span.js';
import { freePort } from '../../src/stack/ports.js';
import { readSpans } from '../../src/storage/spans.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, type RunningGateway } from './harness.js';
// The upstream is the FAKE scripted model server (test/gateway/scripted-upstream.ts).
import {
  chunkText,
  COMPLETION,
  PROMPT_IDS,
  startScriptedGateway,
  stopScriptedGateway,
  streamChunks,
  type ScriptedUpstream,
} from './scripted-upstream.js';

let services: TestServices, store: ObjectStore, upstream: ScriptedUpstream, gw: RunningGateway;
before(async () => ({ services, store, upstream, gw } = await startScriptedGateway()));
after(() => stopScriptedGateway({ services, upstream, gw }));

const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

async function open(overrides: Record<string, unknown> = {}, on: RunningGateway = gw) {
  const input = rolloutInput(overrides);
  const { token, baseUrl } = await on.admin.register(input);
  const ref = { runId: input.runId, iteration: input.iteration, rolloutId: input.rolloutId, attempt: input.attempt };
  const post = (body: unknown, signal?: AbortSignal) =>
    fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      signal,
    });
  let upstreamFailures = -1;
  let abandonedCallMs: number | undefined;
  const spans = async () => {
    ({ upstreamFailures, abandonedCallMs } = await on.admin.close(token));
    const list: Span[] = [];
    for await (const s of readSpans(store, ref)) list.push(s);
    return list;
  };
  return { token, post, spans, upstreamFailures: () => upstreamFailures, abandonedCallMs: () => abandonedCallMs };
}

/** After the agent went away: the upstream request was aborted too, and the span records the disconnect. */
async function abortedSpan(r: Awaited<ReturnType<typeof open>>): Promise<Span> {
  const entry = upstream.received.at(-1)!;
  for (let i = 0; i < 100 && !entry.aborted; i++) await sleep(20);
  assert.equal(entry.aborted, true, 'upstream saw the abort');
  const [span] = await r.spans();
  assert.equal(span!.status, 'error');
  assert.match(span!.error!.message, /client disconnected/);
  return span!;
}

function sseEvents(text: string): string[] {
  return text
    .split('\n\n')
    .filter((b) => b.startsWith('data: '))
    .map((b) => b.slice(6));
}

void describe('gateway against the scripted upstream', () => {
  void it('forwards with the policy model and extension fields, strips them for the agent, and records the span', async () => {
    const r = await open();
    const res = await r.post(chat());
    assert.equal(res.status, 200);
    const body = (await res.json()) as Record<string, unknown> & { choices: Record<string, unknown>[] };
    assert.equal('prompt_token_ids' in body, false);
    assert.equal('token_ids' in body.choices[0]!, false);
    assert.equal(body.choices[0]!.logprobs, null);
    const sent = upstream.received.at(-1)!.body;
    assert.equal(sent.model, 'policy-a');
    assert.equal(sent.logprobs, true);
    const [span, ...rest] = await r.spans();
    assert.equal(rest.length, 0);
    assert.equal(span!.status, 'ok');
    assert.equal(span!.seq, 0);
    assert.deepEqual(span!.promptTokenIds, PROMPT_IDS);
    assert.deepEqual(
      span!.choices[0]!.tokenIds,
      COMPLETION.map((t) => t.id),
    );
    assert.deepEqual(span!.choices[0]!.logprobs, [-0.25, -0.5, -0.75]);
    assert.equal(span!.choices[0]!.text, 'Hello, world');
    assert.deepEqual(span!.servedBy, { model: 'policy-a', version: 'v7' });
    assert.equal(span!.request.headers.authorization, '[redacted]');
    assert.equal(JSON.stringify(span).includes(r.token), false, 'the rollout token never reaches the store');
  });

  void it("imposes the rollout's registered sampling (greedy evaluation) over the agent's", async () => {
    const r = await open({ rolloutId: 'eval-greedy', mode: 'eval', sampling: { temperature: 0 } });
    assert.equal((await r.post(chat({ temperature: 1.3 }))).status, 200);
    assert.equal(upstream.received.at(-1)!.body.temperature, 0);
    const [span] = await r.spans();
    assert.equal(
      (span!.request.body as { temperature: number }).temperature,
      1.3,
      'the span keeps what the agent asked',
    );
    assert.equal((span!.upstreamRequest as { temperature: number }).temperature, 0);
  });

  void it('keeps the extension fields when the agent asked for them', async () => {
    const r = await open();
    const body = (await (await r.post(chat({ logprobs: true, return_token_ids: true }))).json()) as {
      prompt_token_ids: number[];
      choices: { token_ids: number[]; logprobs: unknown }[];
    };
    assert.deepEqual(body.prompt_token_ids, PROMPT_IDS);
    assert.deepEqual(
      body.choices[0]!.token_ids,
      COMPLETION.map((t) => t.id),
    );
    assert.notEqual(body.choices[0]!.logprobs, null);
  });

  void it('passes streamed chunks through as received when the agent asked for the ids and logprobs', async () => {
    const r = await open();
    upstream.script.push({ kind: 'sse', pythonJson: true });
    const res = await r.post(chat({ stream: true, logprobs: true, return_token_ids: true }));
    const events = sseEvents(await res.text());
    const chunks = streamChunks('policy-a').filter((c) => !('usage' in c && c.choices.length === 0));
    assert.deepEqual(
      events,
      [...chunks.map((c) => chunkText(c, true)), '[DONE]'],
      'the text the engine sent, not re-serialised',
    );
    const [span] = await r.spans();
    assert.deepEqual(
      span!.choices[0]!.tokenIds,
      COMPLETION.map((t) => t.id),
    );
    assert.deepEqual(span!.promptTokenIds, PROMPT_IDS);
  });

  void it('retries a 429 (honouring Retry-After) and succeeds', async () => {
    const r = await open();
    const before = upstream.received.length;
    upstream.script.push({ kind: 'status', status: 429, headers: { 'retry-after': '0' } });
    const res = await r.post(chat());
    assert.equal(res.status, 200);
    assert.equal(upstream.received.length - before, 2);
    const spans = await r.spans();
    assert.deepEqual(
      spans.map((s) => s.status),
      ['ok'],
    );
  });

  void it('retries 500s a bounded number of times, then answers the agent with an OpenAI-shaped 502', async () => {
    const r = await open();
    const before = upstream.received.length;
    for (let i = 0; i < 4; i++) upstream.script.push({ kind: 'status', status: 500 });
    const res = await r.post(chat());
    assert.equal(res.status, 502);
    const err = (await res.json()) as { error: { message: string; type: string } };
    assert.match(err.error.message, /upstream 500/);
    assert.equal(upstream.received.length - before, 4);
    const [span] = await r.spans();
    assert.equal(span!.status, 'error');
    assert.equal(span!.error!.status, 500);
    assert.equal(r.upstreamFailures(), 1, 'the attempt is marked as failed on the model side');
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /volt_gateway_upstream_errors_total\{kind="retry_500"\} [3-9]/);
    assert.match(metrics, /volt_gateway_upstream_errors_total\{kind="status_500"\} 1/);
  });

  void it('streams chunks through without extension fields and records the assembled stream', async () => {
    const r = await open();
    const res = await r.post(chat({ stream: true }));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /text\/event-stream/);
    const events = sseEvents(await res.text());
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map(
      (e) =>
        JSON.parse(e) as {
          choices: { delta: { content?: string }; token_ids?: unknown; logprobs: unknown }[];
          prompt_token_ids?: unknown;
        },
    );
    assert.ok(
      chunks.every((c) => c.choices.length > 0),
      'the usage chunk the gateway asked for is not passed on',
    );
    assert.ok(
      chunks.every(
        (c) =>
          c.prompt_token_ids === undefined && c.choices.every((x) => x.token_ids === undefined && x.logprobs === null),
      ),
    );
    const text = chunks.map((c) => c.choices[0]!.delta.content ?? '').join('');
    const [span] = await r.spans();
    assert.equal(span!.stream, true);
    assert.equal(span!.choices[0]!.text, text);
    assert.deepEqual(
      span!.choices[0]!.tokenIds,
      COMPLETION.map((t) => t.id),
    );
    assert.deepEqual(span!.promptTokenIds, PROMPT_IDS);
    assert.equal(span!.choices[0]!.finishReason, 'stop');
    assert.equal(span!.usage!.completion_tokens, 3);
  });

  void it('a stream cut mid-way reaches the agent as an error event, and the span records it', async () => {
    const r = await open();
    upstream.script.push({ kind: 'sse', cutAfter: 2 });
    const res = await r.post(chat({ stream: true }));
    const events = sseEvents(await res.text());
    assert.notEqual(events.at(-1), '[DONE]');
    assert.match(events.at(-1)!, /"error"/);
    const [span] = await r.spans();
    assert.equal(span!.status, 'error');
    assert.match(span!.error!.message, /before \[DONE\]|stream failed/);
    assert.equal(span!.choices[0]!.text, 'Hello');
  });

  void it('waits out a slow first byte', async () => {
    const r = await open();
    upstream.script.push({ kind: 'sse', delayMs: 400 });
    const res = await r.post(chat({ stream: true }));
    assert.equal(sseEvents(await res.text()).at(-1), '[DONE]');
    const [span] = await r.spans();
    assert.ok(Date.parse(span!.firstByteAt!) - Date.parse(span!.startedAt) >= 390);
  });

  void it('a client disconnect aborts the upstream request and is recorded', async () => {
    const r = await open();
    upstream.script.push({ kind: 'hang' });
    const controller = new AbortController();
    const pending = r.post(chat(), controller.signal).catch((e: Error) => e);
    while (upstream.script.length > 0) await sleep(10);
    const held = performance.now();
    await sleep(300);
    controller.abort();
    assert.ok((await pending) instanceof Error);
    await abortedSpan(r);
    assert.equal(r.upstreamFailures(), 0, "the agent's own disconnect is not a model failure");
    // How long the model held the call its agent left: the runner tells a starved agent from a slow one by it.
    assert.ok((r.abandonedCallMs() ?? 0) >= 290, `abandonedCallMs ${r.abandonedCallMs()}`);
    assert.ok(r.abandonedCallMs()! <= performance.now() - held + 1000);
  });

  void it('a call answered in full is not an abandoned one', async () => {
    const r = await open();
    await (await r.post(chat())).json();
    await r.spans();
    assert.equal(r.abandonedCallMs(), undefined);
  });

  void it('a client disconnect mid-stream aborts the upstream stream and the span keeps what was streamed', async () => {
    const r = await open();
    upstream.script.push({ kind: 'sse', chunkDelayMs: 300 });
    const controller = new AbortController();
    const res = await r.post(chat({ stream: true }), controller.signal);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.match(new TextDecoder().decode(first.value), /^data: /);
    controller.abort();
    const span = await abortedSpan(r);
    assert.ok(span.firstByteAt);
  });

  void it('an unreachable model server is retried, then answered with an OpenAI-shaped 502 and recorded as a model-side failure', async () => {
    const down = await startGateway(store, services.dataDir, `http://127.0.0.1:${await freePort('127.0.0.1')}/v1`);
    try {
      const r = await open({}, down);
      const res = await r.post(chat());
      assert.equal(res.status, 502);
      const err = (await res.json()) as { error: { message: string; type: string; code: string } };
      assert.equal(err.error.code, 'upstream_unreachable');
      const [span] = await r.spans();
      assert.equal(span!.status, 'error');
      assert.match(span!.error!.message, /upstream unreachable/);
      assert.equal(r.upstreamFailures(), 1);
      const metrics = await (await fetch(`${down.url}/metrics`)).text();
      assert.match(metrics, /volt_gateway_upstream_errors_total\{kind="retry_connect"\} 3/);
    } finally {
      await down.close();
    }
  });

  void it('a client disconnect during the retry wait ends the call: no further try reaches the model server', async () => {
    const patient = await startGateway(store, services.dataDir, upstream.url, {
      upstream: { retryBaseMs: 1500, retryMaxMs: 1500 },
    });
    try {
      const r = await open({}, patient);
      upstream.script.push({ kind: 'status', status: 503 });
      const before = upstream.received.length;
      const controller = new AbortController();
      const pending = r.post(chat(), controller.signal).catch((e: Error) => e);
      while (upstream.received.length === before) await sleep(10);
      await sleep(100);
      controller.abort();
      assert.ok((await pending) instanceof Error);
      const [span] = await r.spans();
      assert.equal(span!.status, 'error');
      assert.match(span!.error!.message, /client disconnected/);
      await sleep(1600);
      assert.equal(upstream.received.length - before, 1, 'the retry was never sent');
    } finally {
      await patient.close();
    }
  });

  void it('the scripted upstream only ever saw well-formed requests', () => {
    assert.deepEqual(upstream.errors, []);
  });
});
