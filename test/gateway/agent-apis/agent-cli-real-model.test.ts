import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ObjectStore } from '../../../src/storage/object-store.js';
import type { TestServices } from '../../helpers/services.js';
import { callInRollout, rolloutInput, startGateway, startStore, type RunningGateway } from '../harness.js';
import { SERVED_MODEL, startModelServer } from '../model-server.js';
import { FUZZ_TARGETS } from './agent-api-fuzz.js';

// The real SmolLM2 server (8192-token context by default). The full captures do not fit that context (rendered, Claude
// Code's first prompt is 23,574 tokens, Codex's 9,102), so the compacted ones the fuzz mutates are sent.
let services: TestServices, store: ObjectStore, model: Awaited<ReturnType<typeof startModelServer>>, gw: RunningGateway;
before(async () => {
  ({ services, store } = await startStore());
  model = await startModelServer();
  gw = await startGateway(store, services.dataDir, model.url);
});
after(async () => {
  await gw?.close();
  await model?.stop();
  await services?.stop();
});

const BUDGET = { maxModelCalls: null, maxCompletionTokens: null, maxWallSec: null, maxChoicesPerCall: 4 };

async function call(api: 'responses' | 'messages', body: Record<string, unknown>, maxTokensPerCall: number) {
  const target = FUZZ_TARGETS.find((t) => t.api === api)!;
  const input = rolloutInput({ policyModel: SERVED_MODEL, budget: { ...BUDGET, maxTokensPerCall } });
  const headers = (token: string): Record<string, string> =>
    api === 'messages'
      ? { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' }
      : { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  const { status, text, spans } = await callInRollout(gw, store, input, target.path, headers, body);
  const events = [...text.matchAll(/^event: (.*)$/gm)].map((m) => m[1]);
  return { status, text, events, spans };
}

const base = (api: 'responses' | 'messages') => structuredClone(FUZZ_TARGETS.find((t) => t.api === api)!.base);

void describe('agent CLI requests through the gateway to the real model server', () => {
  void it('Claude Code (compacted): a 200 Messages stream from SmolLM2, engine tokens in the span', async () => {
    const r = await call('messages', base('messages'), 16);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.events[0], 'message_start');
    assert.equal(r.events.at(-1), 'message_stop');
    const span = r.spans[0]!;
    assert.equal(span.status, 'ok');
    assert.ok(span.choices[0]!.tokenIds!.length > 0 && span.choices[0]!.tokenIds!.length <= 16);
    assert.match(span.translation.join('\n'), /max_tokens 64000 clamped to 16/);
  });

  void it('Codex (compacted): a 200 Responses stream from SmolLM2', async () => {
    const r = await call('responses', { ...base('responses'), max_output_tokens: 16 }, 4096);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.events[0], 'response.created');
    assert.match(r.events.at(-1)!, /^response\.(completed|incomplete)$/);
    assert.equal(r.spans[0]!.status, 'ok');
  });

  void it("a max_tokens the context cannot hold is clamped to the context left by the engine's own count", async () => {
    // A per-call cap of 8192: any prompt + max_tokens is past the context; stop strings keep the answer short.
    const body = {
      ...base('messages'),
      system: 'Answer.',
      tools: [],
      max_tokens: 8192,
      stop_sequences: [' ', '\n', '.', '!'],
      messages: [{ role: 'user', content: 'Say hello.' }],
    };
    const r = await call('messages', body, 8192);
    assert.equal(r.status, 200, r.text);
    const span = r.spans[0]!;
    const note = span.translation.find((n) => n.startsWith('max_tokens 8192 clamped to '));
    assert.ok(note, span.translation.join('\n'));
    const [, left, context, prompt] = /clamped to (\d+): the model's context \((\d+)\) minus the prompt \((\d+)\)/.exec(
      note,
    )!;
    assert.equal(Number(context), 8192);
    assert.equal(Number(left), 8192 - Number(prompt));
    assert.equal(span.promptTokenIds!.length, Number(prompt));
    assert.ok(span.choices[0]!.tokenIds!.length <= Number(left));
  });
});
