import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import type { Span } from '../../src/contracts/span.js';
import { request } from 'undici';
import { keys } from '../../src/storage/keys.js';
import { spanObjectText } from '../../src/storage/span-compression.js';
import { readSpans } from '../../src/storage/spans.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, startStore, type RunningGateway } from './harness.js';
import { SERVED_MODEL, startModelServer } from './model-server.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';

let services: TestServices;
let store: ObjectStore;
let model: Awaited<ReturnType<typeof startModelServer>>;
let gw: RunningGateway;

before(async () => {
  [{ services, store }, model] = await Promise.all([startStore(), startModelServer()]);
  gw = await startGateway(store, services.dataDir, model.url);
});
after(async () => {
  await gw?.close();
  await model?.stop();
  await services?.stop();
});

async function open(): Promise<{ token: string; baseUrl: string; ref: RolloutRef; spans(): Promise<Span[]> }> {
  const input = rolloutInput({ policyModel: SERVED_MODEL });
  const { token, baseUrl } = await gw.admin.register(input);
  const spans = async () => {
    assert.ok((await gw.admin.close(token)).spans >= 0);
    const list: Span[] = [];
    for await (const s of readSpans(store, input)) list.push(s);
    return list;
  };
  return { token, baseUrl, ref: input, spans };
}

const ask = [{ role: 'user' as const, content: 'Name one colour.' }];
// Extension fields are not in the SDK's types; the SDK sends unknown body fields through unchanged.
const withTokenIds = { return_token_ids: true } as Record<string, unknown>;

void describe('real clients through the gateway to the real model server', () => {
  void it('openai npm SDK: plain, streaming and tools calls are recorded in order with the engine token ids', async () => {
    const r = await open();
    const client = new OpenAI({ baseURL: r.baseUrl, apiKey: r.token, maxRetries: 0 });
    const plain = (await client.chat.completions.create({
      model: 'gpt-4o',
      messages: ask,
      max_tokens: 12,
      temperature: 0,
      ...withTokenIds,
    })) as OpenAI.ChatCompletion & { prompt_token_ids: number[]; choices: { token_ids: number[] }[] };

    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: ask,
      max_tokens: 12,
      stream: true,
      ...withTokenIds,
    });
    let streamed = '';
    const streamedIds: number[] = [];
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? '';
      streamedIds.push(...(((chunk.choices[0] as unknown as { token_ids?: number[] }) ?? {}).token_ids ?? []));
    }

    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const withTools = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
      max_tokens: 24,
    });
    const models = await client.models.list();
    assert.deepEqual(
      models.data.map((m) => m.id),
      [SERVED_MODEL],
    );

    const spans = await r.spans();
    assert.deepEqual(
      spans.map((s) => s.seq),
      [0, 1, 2],
    );
    assert.deepEqual(
      spans.map((s) => s.stream),
      [false, true, false],
    );
    const [s0, s1, s2] = spans as [Span, Span, Span];
    assert.deepEqual(s0.choices[0]!.tokenIds, plain.choices[0]!.token_ids);
    assert.deepEqual(s0.promptTokenIds, plain.prompt_token_ids);
    assert.equal(s0.choices[0]!.text, plain.choices[0]!.message.content);
    assert.equal(s0.choices[0]!.logprobs!.length, s0.choices[0]!.tokenIds!.length);
    assert.equal(plain.choices[0]!.logprobs, null, 'logprobs the agent did not ask for are stripped');
    assert.equal(s1.choices[0]!.text, streamed);
    assert.deepEqual(s1.choices[0]!.tokenIds, streamedIds);
    assert.equal(s1.choices[0]!.logprobs!.length, streamedIds.length);
    assert.ok(s1.promptTokenIds!.length > 0);
    assert.deepEqual((s2.upstreamRequest as { tools: unknown }).tools, tools);
    assert.equal(s2.choices[0]!.text, withTools.choices[0]!.message.content ?? '');
    assert.deepEqual(s2.choices[0]!.toolCalls ?? [], withTools.choices[0]!.message.tool_calls ?? []);
    for (const s of spans) {
      assert.deepEqual(s.servedBy, { model: SERVED_MODEL, version: 'base' });
      assert.equal(s.status, 'ok');
      assert.equal(s.usage!.completion_tokens, s.choices[0]!.tokenIds!.length);
    }
  });

  void it('openai npm SDK legacy completions, plain and streaming, keep the engine token ids', async () => {
    const r = await open();
    const client = new OpenAI({ baseURL: r.baseUrl, apiKey: r.token, maxRetries: 0 });
    const plain = (await client.completions.create({
      model: 'x',
      prompt: 'Once upon a time',
      max_tokens: 6,
      temperature: 0,
      ...withTokenIds,
    })) as OpenAI.Completion & { choices: { token_ids: number[] }[] };
    const stream = await client.completions.create({
      model: 'x',
      prompt: 'The sky is',
      max_tokens: 6,
      stream: true,
      logprobs: 0,
    });
    let streamed = '';
    let streamedLogprobs = 0;
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.text ?? '';
      streamedLogprobs += chunk.choices[0]?.logprobs?.token_logprobs?.length ?? 0;
    }
    const [s0, s1] = (await r.spans()) as [Span, Span];
    assert.equal(s0.endpoint, 'completions');
    assert.deepEqual(s0.choices[0]!.tokenIds, plain.choices[0]!.token_ids);
    assert.equal(s0.choices[0]!.text, plain.choices[0]!.text);
    assert.equal(s0.choices[0]!.logprobs!.length, s0.choices[0]!.tokenIds!.length);
    assert.equal(plain.choices[0]!.logprobs, null);
    assert.equal(s1.choices[0]!.text, streamed);
    assert.equal(streamedLogprobs, s1.choices[0]!.tokenIds!.length, 'asked-for logprobs reach the agent');
    assert.deepEqual((s1.upstreamRequest as { logprobs: number }).logprobs, 0);
  });

  void it("the agent's request is stored as the text it sent: spacing, escapes and numbers as written, read back as it parsed", async () => {
    const r = await open();
    const bodies = [
      // Python's json.dumps: ", " and ": " separators, non-ASCII escaped; a float written 0.0; a key repeated (the last wins).
      '{"model": "any", "messages": [{"role": "user", "content": "Caf\\u00e9 \\"q\\" \\ud83d\\ude00?"}], "max_tokens": 4, "temperature": 0.0, "max_tokens": 5}',
      // Pretty-printed over several lines: stored re-serialised, so the record stays one line.
      JSON.stringify(
        { model: 'any', messages: [{ role: 'user', content: 'Line one\nline two' }], max_tokens: 4, temperature: 0 },
        null,
        2,
      ),
      // A byte order mark, which the JSON parser skips (and so must the stored text), and tabs between tokens.
      '\ufeff{\t"model": "any", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}',
    ];
    for (const body of bodies) {
      const res = await request(`${r.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${r.token}` },
        body,
      });
      const answer = await res.body.text();
      assert.equal(res.statusCode, 200, answer);
    }
    const spans = await r.spans();
    assert.deepEqual(
      spans.map((s) => s.request.body),
      bodies.map((b) => JSON.parse(b.replace(/^\ufeff/, '')) as unknown),
    );
    assert.equal((spans[0]!.request.body as { max_tokens: number }).max_tokens, 5);
    let stored = '';
    for await (const o of store.list(keys.spans(r.ref))) stored += spanObjectText(await store.getBytes(o.key));
    assert.equal(stored.split('\n').filter(Boolean).length, bodies.length, 'one line per call');
    assert.ok(!stored.includes('\ufeff'), 'no byte order mark inside a record');
    assert.ok(stored.includes(`"body":${bodies[0]}`), 'a one-line request is stored as sent');
    assert.ok(!stored.includes(bodies[1]!), 'a multi-line request is not spliced in as it is');
  });

  void it('Python openai SDK streaming: the span text is what the client printed', async () => {
    const r = await open();
    const script = [
      'import os, sys, openai',
      'c = openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], max_retries=0)',
      's = c.chat.completions.create(model="any", messages=[{"role": "user", "content": "Count to three."}], max_tokens=12, stream=True)',
      'sys.stdout.write("".join((ch.choices[0].delta.content or "") for ch in s if ch.choices))',
    ].join('\n');
    const { stdout } = await promisify(execFile)('.venv/bin/python', ['-c', script], {
      env: { ...process.env, OPENAI_BASE_URL: r.baseUrl, OPENAI_API_KEY: r.token },
    });
    const [span, ...rest] = await r.spans();
    assert.equal(rest.length, 0);
    assert.equal(span!.stream, true);
    assert.equal(span!.choices[0]!.text, stdout);
    assert.ok(span!.choices[0]!.tokenIds!.length > 0);
    assert.equal(span!.request.headers.authorization, '[redacted]');
  });

  void it('LangChain.js ChatOpenAI by base URL: two turns, two spans in order', async () => {
    const r = await open();
    const llm = new ChatOpenAI({
      model: 'gpt-4o-mini',
      apiKey: r.token,
      maxTokens: 10,
      maxRetries: 0,
      configuration: { baseURL: r.baseUrl },
    });
    const first = await llm.invoke('Say yes.');
    const second = await llm.invoke([
      ['human', 'Say yes.'],
      ['ai', String(first.content)],
      ['human', 'Say no.'],
    ]);
    const spans = await r.spans();
    assert.deepEqual(
      spans.map((s) => s.seq),
      [0, 1],
    );
    assert.equal(spans[0]!.choices[0]!.text, first.content);
    assert.equal(spans[1]!.choices[0]!.text, second.content);
    assert.ok(spans[1]!.promptTokenIds!.length > spans[0]!.promptTokenIds!.length);
  });
});
