import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { PromptOverlay } from '../../src/contracts/prompt-overlay.js';
import type { Span } from '../../src/contracts/span.js';
import { GatewayAdminError } from '../../src/gateway/admin-client.js';
import { renderSystemPrompt } from '../../src/prompts/system-prompt.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { readSpans as readStoredSpans } from '../../src/storage/spans.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { createPromptOverlayStore } from '../../src/storage/prompt-overlays.js';
import type { TestServices } from '../helpers/services.js';
import { rolloutInput, startGateway, startStore, type RunningGateway } from './harness.js';
import { SERVED_MODEL, startModelServer } from './model-server.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';

const root = path.resolve(import.meta.dirname, '../..');
const RUN = 'run-overlay';
const AGENT_PROMPT_START = 'You solve math word problems with a calculator.';
const AGENTS = {
  ts: [path.join(root, 'node_modules/.bin/tsx'), 'examples/calculator-ts/agent.ts'],
  py: [path.join(root, '.venv/bin/python'), 'examples/calculator-py/agent.py'],
};

let services: TestServices;
let store: ObjectStore;
let model: Awaited<ReturnType<typeof startModelServer>>;
let gw: RunningGateway;
let runner: LocalRunner;
const overlays: Record<number, PromptOverlay> = {};

before(async () => {
  [{ services, store }, model] = await Promise.all([startStore(), startModelServer()]);
  gw = await startGateway(store, services.dataDir, model.url);
  runner = new LocalRunner({
    root: path.join(services.dataDir, 'rollouts'),
    logs: { put: async (key, bytes) => void (await store.putBytes(key, Buffer.from(bytes))) },
  });
  const put = createPromptOverlayStore(store).put;
  const origin = { strategy: 'manual' as const, parents: [0], round: null, note: 'test' };
  const createdAt = new Date().toISOString();
  overlays[1] = await put({
    runId: RUN,
    version: 1,
    mode: 'replace',
    template: 'Overlay one says: be exact.\n{{original}}\nAlways end with <answer>.',
    origin,
    createdAt,
  });
  overlays[2] = await put({
    runId: RUN,
    version: 2,
    mode: 'prepend',
    template: 'Overlay two: think step by step.',
    origin,
    createdAt,
  });
});
after(async () => {
  await gw?.close();
  await model?.stop();
  await services?.stop();
});

async function readSpans(ref: RolloutRef): Promise<Span[]> {
  const out: Span[] = [];
  for await (const s of readStoredSpans(store, ref)) out.push(s);
  return out;
}

/** One real agent rollout through the real runner (same env contract as production), then its recorded spans. */
async function runAgent(agent: keyof typeof AGENTS, version: number | null): Promise<Span[]> {
  const input = rolloutInput({
    runId: RUN,
    policyModel: SERVED_MODEL,
    promptOverlay: version === null ? null : { version },
  });
  const { token, baseUrl } = await gw.admin.register(input);
  const result = await runner.run(
    {
      ref: input,
      taskId: 'add-1',
      groupId: 'g',
      mode: 'train',
      taskInput: { question: 'Ana has 12 apples and gets 5 more. How many apples does she have?' },
      agent: { command: AGENTS[agent], cwd: root },
      gateway: { baseUrl, token },
      timeoutMs: 240_000,
      env: { OPENAI_MODEL: 'policy', AGENT_TEMPERATURE: '0', AGENT_MAX_TURNS: '2', AGENT_MAX_TOKENS: '16' },
    },
    new AbortController().signal,
  );
  assert.equal(result.outcome, 'succeeded', `${agent} agent: ${result.detail}`);
  const closed = await gw.admin.close(token);
  const spans = await readSpans(input);
  assert.equal(spans.length, closed.spans);
  assert.ok(spans.length >= 1);
  return spans;
}

type Message = { role: string; content: string };
const messagesOf = (body: unknown) => (body as { messages: Message[] }).messages;

/** Every span: overlay recorded, the agent's own system message in `request`, the rendered one upstream, rest equal. */
function assertOverlaid(spans: Span[], overlay: PromptOverlay): void {
  for (const span of spans) {
    assert.deepEqual(span.promptOverlay, { version: overlay.version });
    assert.equal(span.status, 'ok');
    const sent = messagesOf(span.request.body);
    const upstream = messagesOf(span.upstreamRequest);
    assert.equal(sent[0]!.role, 'system');
    assert.ok(sent[0]!.content.startsWith(AGENT_PROMPT_START), 'request.body keeps the agent system prompt as sent');
    assert.ok(!sent[0]!.content.includes('Overlay'), 'request.body is not the overlaid one');
    assert.deepEqual(upstream[0], { role: 'system', content: renderSystemPrompt(overlay, sent[0]!.content) });
    assert.ok(
      upstream[0]!.content.includes(sent[0]!.content),
      'the rendered system message contains the agent original',
    );
    assert.deepEqual(upstream.slice(1), sent.slice(1), 'other messages reach the model unchanged');
  }
}

void describe('prompt overlays applied by the gateway to unmodified agents on the real model', () => {
  let plainFirstPromptTokens = 0;

  void it('without an overlay every span records null and the model gets the agent messages unchanged', async () => {
    const spans = await runAgent('ts', null);
    for (const span of spans) {
      assert.equal(span.promptOverlay, null);
      assert.deepEqual(messagesOf(span.upstreamRequest), messagesOf(span.request.body));
    }
    plainFirstPromptTokens = spans[0]!.usage!.prompt_tokens;
  });

  void it('TS calculator agent (openai npm SDK) under a replace overlay', async () => {
    const spans = await runAgent('ts', 1);
    assertOverlaid(spans, overlays[1]!);
    // The model saw the longer, rendered prompt: the engine's own token count grew, not just the recorded body.
    assert.ok(
      spans[0]!.usage!.prompt_tokens > plainFirstPromptTokens + 10,
      `${spans[0]!.usage!.prompt_tokens} vs ${plainFirstPromptTokens}`,
    );
    assert.equal(spans[0]!.promptTokenIds!.length, spans[0]!.usage!.prompt_tokens);
  });

  void it('Python calculator agent (openai SDK) under a prepend overlay', async () => {
    const spans = await runAgent('py', 2);
    assertOverlaid(spans, overlays[2]!);
    assert.ok(
      messagesOf(spans[0]!.upstreamRequest)[0]!.content.startsWith(
        'Overlay two: think step by step.\n\nYou solve math',
      ),
    );
  });

  void it('registration: a missing version is 404 overlay_not_found, a bad shape 400, a conflicting re-register 409', async () => {
    const missing = rolloutInput({ runId: RUN, promptOverlay: { version: 99 } });
    await assert.rejects(
      gw.admin.register(missing),
      (e: unknown) => e instanceof GatewayAdminError && e.status === 404 && e.code === 'overlay_not_found',
    );
    const res = await fetch(`${gw.url}/admin/rollouts`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-key-123', 'content-type': 'application/json' },
      body: JSON.stringify(missing),
    });
    const body = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string } };
    assert.equal(body.error.type, 'not_found_error');
    assert.equal(body.error.param, 'promptOverlay.version');
    assert.match(body.error.message, /version 99/);
    for (const bad of [{ version: -1 }, { version: 1.5 }, { version: '1' }, { version: 1, template: 'x' }, 3]) {
      await assert.rejects(
        gw.admin.register(rolloutInput({ runId: RUN, promptOverlay: bad })),
        (e: unknown) => e instanceof GatewayAdminError && e.status === 400 && /promptOverlay/.test(e.message),
        JSON.stringify(bad),
      );
    }
    const input = rolloutInput({ runId: RUN, promptOverlay: { version: 1 } });
    const first = await gw.admin.register(input);
    assert.equal((await gw.admin.register(input)).token, first.token, 'same overlay: idempotent');
    await assert.rejects(
      gw.admin.register({ ...input, promptOverlay: { version: 2 } }),
      (e: unknown) => e instanceof GatewayAdminError && e.status === 409,
    );
    assert.deepEqual((await gw.admin.get(first.token)).promptOverlay, { version: 1 });
    const zero = await gw.admin.register(rolloutInput({ runId: RUN, promptOverlay: { version: 0 } }));
    assert.equal((await gw.admin.get(zero.token)).promptOverlay, null, 'version 0 is the agent own prompt');
  });

  void it('a restarted gateway reloads the overlay from the store and keeps applying it', async () => {
    const input = rolloutInput({ runId: RUN, policyModel: SERVED_MODEL, promptOverlay: { version: 2 } });
    const { token } = await gw.admin.register(input);
    const ask = async (url: string) => {
      const client = new OpenAI({ baseURL: `${url}/r/${token}/v1`, apiKey: token, maxRetries: 0 });
      await client.chat.completions.create({
        model: 'x',
        messages: [
          { role: 'system', content: 'Agent prompt.' },
          { role: 'user', content: 'Hi' },
        ],
        max_tokens: 3,
        temperature: 0,
      });
    };
    await ask(gw.url);
    await gw.close();
    gw = await startGateway(store, services.dataDir, model.url, { dataDir: gw.dataDir });
    await ask(gw.url);
    await gw.admin.close(token);
    const spans = await readSpans(input);
    assert.deepEqual(
      spans.map((s) => s.seq),
      [0, 1],
    );
    for (const span of spans) {
      assert.deepEqual(span.promptOverlay, { version: 2 });
      assert.equal(messagesOf(span.upstreamRequest)[0]!.content, 'Overlay two: think step by step.\n\nAgent prompt.');
      assert.equal(messagesOf(span.request.body)[0]!.content, 'Agent prompt.');
    }
    assert.ok(fs.existsSync(path.join(gw.dataDir, 'gateway', 'rollouts.json')));
  });
});
