import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { Agent, run, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import type { Span } from '../../src/contracts/span.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';
import { readSpans } from '../../src/storage/spans.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, startStore, type RunningGateway } from './harness.js';
import { SERVED_MODEL, startModelServer } from './model-server.js';

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

async function open(): Promise<{
  token: string;
  baseUrl: string;
  anthropicUrl: string;
  ref: RolloutRef;
  spans(): Promise<Span[]>;
}> {
  const input = rolloutInput({ policyModel: SERVED_MODEL });
  const { token, baseUrl } = await gw.admin.register(input);
  const spans = async () => {
    await gw.admin.close(token);
    const list: Span[] = [];
    for await (const s of readSpans(store, input)) list.push(s);
    return list;
  };
  return { token, baseUrl, anthropicUrl: baseUrl.replace(/\/v1$/, ''), ref: input, spans };
}

/** What every translated span must hold: the engine's tokens and logprobs, and the counts the agent was told. */
function assertEngineTokens(span: Span, usage: { input: number; output: number }): void {
  assert.equal(span.endpoint, 'chat.completions', 'the engine is always asked in chat completions');
  assert.equal(span.status, 'ok');
  const choice = span.choices[0]!;
  assert.ok(choice.tokenIds!.length > 0);
  assert.equal(choice.tokenIds!.length, usage.output, 'output tokens the agent saw = engine token ids');
  assert.equal(choice.logprobs!.length, choice.tokenIds!.length);
  assert.equal(span.promptTokenIds!.length, usage.input, 'input tokens the agent saw = engine prompt ids');
  assert.deepEqual(span.servedBy, { model: SERVED_MODEL, version: 'base' });
}

const addTool = {
  type: 'function' as const,
  name: 'add',
  description: 'Add two numbers',
  strict: false,
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
};

void describe('unmodified Responses / Messages SDK clients through the gateway to the real model server', () => {
  void it('openai npm responses.create, plain and streamed: spans in order with the engine tokens; text received = span text', async () => {
    const r = await open();
    const client = new OpenAI({ baseURL: r.baseUrl, apiKey: r.token, maxRetries: 0 });
    const plain = await client.responses.create({
      model: 'gpt-4.1',
      instructions: 'Answer briefly.',
      input: 'Name one colour.',
      max_output_tokens: 12,
      temperature: 0,
      store: false,
    });
    const stream = await client.responses.create({
      model: 'gpt-4.1',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Count to three.' }] }],
      max_output_tokens: 12,
      stream: true,
    });
    const events: { type: string; sequence_number: number }[] = [];
    let streamed = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      events.push(ev);
      if (ev.type === 'response.output_text.delta') streamed += ev.delta;
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
    }

    const spans = await r.spans();
    assert.deepEqual(
      spans.map((s) => [s.seq, s.api, s.stream]),
      [
        [0, 'responses', false],
        [1, 'responses', true],
      ],
    );
    const [s0, s1] = spans as [Span, Span];
    assertEngineTokens(s0, { input: plain.usage!.input_tokens, output: plain.usage!.output_tokens });
    assert.equal(s0.choices[0]!.text, plain.output_text);
    assert.equal((s0.request.body as { input: string }).input, 'Name one colour.', "the agent's request as sent");
    assert.deepEqual((s0.upstreamRequest as { messages: unknown[] }).messages, [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Name one colour.' },
    ]);
    assert.equal(s0.request.headers.authorization, '[redacted]');
    assert.equal(plain.status, s0.choices[0]!.finishReason === 'length' ? 'incomplete' : 'completed');

    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    assert.deepEqual(
      events.slice(0, 4).map((e) => e.type),
      ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added'],
    );
    assert.ok(final, `no final event in ${events.map((e) => e.type).join(', ')}`);
    assert.equal(s1.choices[0]!.text, streamed);
    assert.equal(
      final.output_text ??
        (final.output[0] as OpenAI.Responses.ResponseOutputMessage).content
          .map((p) => (p.type === 'output_text' ? p.text : ''))
          .join(''),
      streamed,
    );
    assertEngineTokens(s1, { input: final.usage!.input_tokens, output: final.usage!.output_tokens });
  });

  void it('@openai/agents run() in its default mode (Responses API) with a function tool, from OPENAI_BASE_URL / OPENAI_API_KEY alone', async () => {
    const r = await open();
    const saved = {
      url: process.env.OPENAI_BASE_URL,
      key: process.env.OPENAI_API_KEY,
      tracing: process.env.OPENAI_AGENTS_DISABLE_TRACING,
    };
    Object.assign(process.env, {
      OPENAI_BASE_URL: r.baseUrl,
      OPENAI_API_KEY: r.token,
      OPENAI_AGENTS_DISABLE_TRACING: '1',
    });
    const calls: { a: number; b: number }[] = [];
    try {
      const add = tool({
        name: 'add',
        description: 'Add two numbers',
        parameters: z.object({ a: z.number(), b: z.number() }),
        execute: ({ a, b }) => (calls.push({ a, b }), String(a + b)),
      });
      const agent = new Agent({
        name: 'calculator',
        instructions: 'Use the add tool to add numbers.',
        tools: [add],
        modelSettings: { temperature: 0, maxTokens: 48 },
      });
      const result = await run(agent, 'What is 2 plus 3?', { maxTurns: 4 });
      const spans = await r.spans();
      assert.equal(spans.length, result.rawResponses.length, 'one span per model call the SDK made');
      assert.deepEqual(
        spans.map((s) => s.seq),
        spans.map((_, i) => i),
      );
      for (const [i, s] of spans.entries()) {
        assert.equal(s.api, 'responses');
        assert.equal(s.callKind, 'agent_turn', 'a call offering tools is a turn of the agent loop');
        assert.equal(s.requestedModel, (s.request.body as { model: string }).model);
        assert.ok(
          s.requestedModel && s.requestedModel !== s.servedBy.model,
          'the name the SDK asked for, not the served one',
        );
        const raw = result.rawResponses[i]!;
        assertEngineTokens(s, { input: raw.usage.inputTokens, output: raw.usage.outputTokens });
        assert.deepEqual(
          (s.upstreamRequest as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name),
          ['add'],
        );
        // What the SDK received is what the span recorded: text and function calls.
        const text = raw.output
          .filter((o) => o.type === 'message')
          .flatMap((o) => (o as { content: { type: string; text?: string }[] }).content)
          .map((p) => p.text ?? '')
          .join('');
        assert.equal(text, s.choices[0]!.text);
        const fnCalls = raw.output.filter((o) => o.type === 'function_call') as {
          callId: string;
          name: string;
          arguments: string;
        }[];
        assert.deepEqual(
          fnCalls.map((c) => [c.name, c.arguments]),
          (s.choices[0]!.toolCalls ?? []).map((c) => [
            (c as { function: { name: string } }).function.name,
            (c as { function: { arguments: string } }).function.arguments,
          ]),
        );
        // A call the model made comes back in the next request as function_call + function_call_output.
        if (fnCalls.length && spans[i + 1]) {
          const next = (spans[i + 1]!.request.body as { input: { type?: string; call_id?: string }[] }).input;
          assert.ok(next.some((it) => it.type === 'function_call_output' && it.call_id === fnCalls[0]!.callId));
        }
      }
      assert.equal(result.finalOutput, spans.at(-1)!.choices[0]!.text);
      assert.equal(calls.length, spans.filter((s) => s.choices[0]!.toolCalls?.length).length);
    } finally {
      for (const [k, v] of [
        ['OPENAI_BASE_URL', saved.url],
        ['OPENAI_API_KEY', saved.key],
        ['OPENAI_AGENTS_DISABLE_TRACING', saved.tracing],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  void it('openai npm responses.create with the function tool history the SDK sends back (function_call + function_call_output)', async () => {
    const r = await open();
    const client = new OpenAI({ baseURL: r.baseUrl, apiKey: r.token, maxRetries: 0 });
    const res = await client.responses.create({
      model: 'gpt-4.1',
      tools: [addTool],
      max_output_tokens: 16,
      temperature: 0,
      input: [
        { role: 'user', content: 'What is 2 plus 3?' },
        { type: 'function_call', call_id: 'call_1', name: 'add', arguments: '{"a":2,"b":3}' },
        { type: 'function_call_output', call_id: 'call_1', output: '5' },
      ],
    });
    const [span, ...rest] = await r.spans();
    assert.equal(rest.length, 0);
    assert.deepEqual((span!.upstreamRequest as { messages: unknown[] }).messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '5' },
    ]);
    assertEngineTokens(span!, { input: res.usage!.input_tokens, output: res.usage!.output_tokens });
    assert.equal(res.output_text, span!.choices[0]!.text);
  });

  void it('@anthropic-ai/sdk messages.create and messages.stream by base URL and key: Anthropic shapes, spans with the engine tokens', async () => {
    const r = await open();
    const client = new Anthropic({ baseURL: r.anthropicUrl, apiKey: r.token, maxRetries: 0 });
    const plain = await client.messages.create({
      model: 'claude-opus-4-5',
      max_tokens: 12,
      system: 'Answer briefly.',
      messages: [{ role: 'user', content: 'Name one colour.' }],
    });
    const stream = client.messages.stream({
      model: 'claude-opus-4-5',
      max_tokens: 12,
      messages: [{ role: 'user', content: 'Count to three.' }],
    });
    const types: string[] = [];
    let streamed = '';
    stream.on('text', (t) => (streamed += t));
    for await (const ev of stream) types.push(ev.type);
    const final = await stream.finalMessage();
    const counted = await client.messages.countTokens({
      model: 'claude-opus-4-5',
      system: 'Answer briefly.',
      messages: [{ role: 'user', content: 'Name one colour.' }],
    });
    // The docs' tool example: a tool_use the model made and the tool_result the agent sends back.
    const tools = await client.messages.create({
      model: 'claude-opus-4-5',
      max_tokens: 16,
      tools: [
        {
          name: 'add',
          description: 'Add two numbers',
          input_schema: {
            type: 'object',
            properties: { a: { type: 'number' }, b: { type: 'number' } },
            required: ['a', 'b'],
          },
        },
      ],
      messages: [
        { role: 'user', content: 'What is 2 plus 3?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'add', input: { a: 2, b: 3 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5' }] },
      ],
    });

    const spans = await r.spans();
    assert.deepEqual(
      spans.map((s) => [s.seq, s.api, s.stream]),
      [
        [0, 'messages', false],
        [1, 'messages', true],
        [2, 'messages', false],
      ],
    );
    const [s0, s1, s2] = spans as [Span, Span, Span];
    const textOf = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    assertEngineTokens(s0, { input: plain.usage.input_tokens, output: plain.usage.output_tokens });
    assert.equal(textOf(plain), s0.choices[0]!.text);
    assert.equal(
      counted.input_tokens,
      plain.usage.input_tokens,
      'count_tokens counts the prompt the engine saw; it records no span',
    );
    assert.equal(plain.stop_reason, s0.choices[0]!.finishReason === 'length' ? 'max_tokens' : 'end_turn');
    // This SDK sends its key as a bearer token, older ones (and the Python SDK) as x-api-key: either is the token, redacted.
    assert.equal(s0.request.headers['x-api-key'] ?? s0.request.headers.authorization, '[redacted]');
    assert.ok(s0.request.headers['anthropic-version'], "the SDK's anthropic-version header is accepted and recorded");
    assert.deepEqual((s0.upstreamRequest as { messages: unknown[] }).messages[0], {
      role: 'system',
      content: 'Answer briefly.',
    });

    assert.deepEqual([types[0], types.at(-2), types.at(-1)], ['message_start', 'message_delta', 'message_stop']);
    assert.equal(streamed, s1.choices[0]!.text);
    assert.equal(textOf(final), streamed);
    assertEngineTokens(s1, { input: final.usage.input_tokens, output: final.usage.output_tokens });

    assert.deepEqual((s2.upstreamRequest as { messages: unknown[] }).messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '5' },
    ]);
    assert.equal(textOf(tools), s2.choices[0]!.text);
  });

  void it('Python openai responses.create / responses.stream and anthropic messages.create / messages.stream / tools, from the env alone', async () => {
    const r = await open();
    const script = String.raw`
import json, os, anthropic, openai
o = openai.OpenAI(max_retries=0)
a = anthropic.Anthropic(max_retries=0)
out = []
res = o.responses.create(model="gpt-4.1", input="Name one colour.", max_output_tokens=12, temperature=0)
out.append({"text": res.output_text, "in": res.usage.input_tokens, "out": res.usage.output_tokens, "calls": []})
# A reply cut at max_output_tokens ends in response.incomplete (as the real API's does): take whichever ends it.
text, fin = "", None
with o.responses.stream(model="gpt-4.1", input="Count to three.", max_output_tokens=12) as s:
    for e in s:
        if e.type == "response.output_text.delta":
            text += e.delta
        if e.type in ("response.completed", "response.incomplete"):
            fin = e.response
out.append({"text": text, "final": fin.output_text, "in": fin.usage.input_tokens, "out": fin.usage.output_tokens, "calls": []})
m = a.messages.create(model="claude-x", max_tokens=12, messages=[{"role": "user", "content": "Name one colour."}])
out.append({"text": "".join(b.text for b in m.content if b.type == "text"), "in": m.usage.input_tokens, "out": m.usage.output_tokens, "calls": [], "stop": m.stop_reason})
with a.messages.stream(model="claude-x", max_tokens=12, messages=[{"role": "user", "content": "Count to three."}]) as s:
    text = "".join(s.text_stream)
    fin = s.get_final_message()
out.append({"text": text, "final": "".join(b.text for b in fin.content if b.type == "text"), "in": fin.usage.input_tokens, "out": fin.usage.output_tokens, "calls": [], "stop": fin.stop_reason})
tools = [{"name": "add", "description": "Add two numbers", "input_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]
t = a.messages.create(model="claude-x", max_tokens=24, tools=tools, messages=[{"role": "user", "content": "What is 2 plus 3? Use the add tool."}])
out.append({"text": "".join(b.text for b in t.content if b.type == "text"), "in": t.usage.input_tokens, "out": t.usage.output_tokens, "calls": [[b.name, b.input] for b in t.content if b.type == "tool_use"], "stop": t.stop_reason})
print(json.dumps(out))
`;
    const env = {
      ...process.env,
      OPENAI_BASE_URL: r.baseUrl,
      OPENAI_API_KEY: r.token,
      ANTHROPIC_BASE_URL: r.anthropicUrl,
      ANTHROPIC_API_KEY: r.token,
    };
    const { stdout } = await promisify(execFile)('.venv/bin/python', ['-c', script], { env });
    const got = JSON.parse(stdout) as {
      text: string;
      final?: string;
      in: number;
      out: number;
      calls: [string, unknown][];
      stop?: string;
    }[];
    const spans = await r.spans();
    assert.deepEqual(
      spans.map((s) => [s.api, s.stream]),
      [
        ['responses', false],
        ['responses', true],
        ['messages', false],
        ['messages', true],
        ['messages', false],
      ],
    );
    for (const [i, s] of spans.entries()) {
      const g = got[i]!;
      assert.equal(g.text, s.choices[0]!.text, `call ${i}: text received = span text`);
      if (g.final !== undefined) assert.equal(g.final, g.text);
      assertEngineTokens(s, { input: g.in, output: g.out });
      const spanCalls = (s.choices[0]!.toolCalls ?? []).map((c) => {
        const f = (c as { function: { name: string; arguments: string } }).function;
        return [f.name, JSON.parse(f.arguments)];
      });
      assert.deepEqual(g.calls, spanCalls);
    }
    assert.deepEqual(
      (spans[4]!.upstreamRequest as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name),
      ['add'],
    );
    assert.equal(
      got[4]!.stop,
      spans[4]!.choices[0]!.toolCalls?.length
        ? 'tool_use'
        : spans[4]!.choices[0]!.finishReason === 'length'
          ? 'max_tokens'
          : 'end_turn',
    );
  });
});
