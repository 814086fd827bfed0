import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { ObjectStore } from '../../../src/storage/object-store.js';
import type { TestServices } from '../../helpers/services.js';
import { callInRollout, rolloutInput, type RunningGateway } from '../harness.js';
// The upstream is the FAKE scripted model server (test/gateway/scripted-upstream.ts): it answers "Hello, world".
import { startScriptedGateway, stopScriptedGateway, type ScriptedUpstream } from '../scripted-upstream.js';

/** A first request as the agent CLI sent it (auth redacted): its path under /r/<token>, headers and body. */
interface Capture {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}
const capture = (name: string) =>
  JSON.parse(fs.readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8')) as Capture;
const CLAUDE_CODE = capture('claude-code-2.1.197-messages.json');
const CODEX = capture('codex-0.171.0-responses.json');

let services: TestServices, store: ObjectStore, upstream: ScriptedUpstream, gw: RunningGateway;
before(async () => ({ services, store, upstream, gw } = await startScriptedGateway()));
after(() => stopScriptedGateway({ services, upstream, gw }));

const BUDGET = { maxModelCalls: null, maxCompletionTokens: null, maxWallSec: null, maxChoicesPerCall: 4 };

/** Replays a capture into a fresh rollout, its token where the CLI put its key; returns the SSE events and the span. */
async function replay(c: Capture, body: Record<string, unknown> = c.body, extra: Record<string, unknown> = {}) {
  const input = rolloutInput({ budget: { ...BUDGET, maxTokensPerCall: 4096 }, ...extra });
  const headers = (token: string) => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(c.headers)) {
      const key = k.toLowerCase();
      if (['host', 'content-length', 'connection', 'accept-encoding'].includes(key)) continue;
      out[key] = key === 'x-api-key' ? token : key === 'authorization' ? `Bearer ${token}` : v;
    }
    return out;
  };
  const call = await callInRollout(gw, store, input, c.path.replace(/^\/r\/tok/, ''), headers, body);
  return { ...call, events: sse(call.text) };
}

function sse(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? 'null';
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

const lastUpstream = () =>
  upstream.received.at(-1)!.body as { messages: { role: string; content: unknown }[] } & Record<string, unknown>;

void describe('first requests of real agent CLIs, replayed against the gateway', () => {
  void it('Claude Code 2.1.197: a 200 Messages stream, thinking and cache hints dropped and recorded', async () => {
    assert.match(CLAUDE_CODE.path, /\?beta=true$/);
    const r = await replay(CLAUDE_CODE);
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^text\/event-stream/);
    assert.deepEqual(
      r.events.map((e) => e.event),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    const text = r.events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (e.data.delta as { text: string }).text)
      .join('');
    assert.equal(text, 'Hello, world');
    // The model that answered: the rollout's policy (the gateway rewrote claude-opus-4-8), as in chat answers.
    assert.equal((r.events[0]!.data.message as { model: string }).model, 'policy-a');
    assert.equal((r.events.at(-2)!.data.delta as { stop_reason: string }).stop_reason, 'end_turn');
    assert.ok(!r.events.some((e) => JSON.stringify(e.data).includes('"thinking"')), 'no thinking blocks');

    const sent = lastUpstream();
    assert.equal(sent.thinking, undefined);
    assert.equal(sent.context_management, undefined);
    assert.equal(sent.max_tokens, 4096, "64000 clamped to the rollout's per-call cap");
    assert.equal((sent.tools as unknown[]).length, 25);
    // The mid-conversation system message stays where Claude Code put it, between the user turns.
    const roles = sent.messages.map((m) => m.role);
    const sysAt = (CLAUDE_CODE.body.messages as { role: string }[]).findIndex((m) => m.role === 'system');
    assert.ok(sysAt > 0);
    assert.equal(roles[0], 'system');
    assert.equal(roles.filter((x) => x === 'system').length, 2);
    assert.equal(roles.lastIndexOf('system'), sysAt + 1);

    const [span] = r.spans;
    assert.equal(r.spans.length, 1);
    assert.equal(span!.api, 'messages');
    assert.equal(span!.status, 'ok');
    assert.deepEqual(span!.request.body, CLAUDE_CODE.body);
    const notes = span!.translation.join('\n');
    assert.match(notes, /thinking \(adaptive\) dropped/);
    assert.match(notes, /context_management dropped/);
    assert.match(notes, /output_config\.effort \(high\) dropped/);
    assert.match(notes, /cache_control dropped/);
    assert.match(notes, /max_tokens 64000 clamped to 4096: the rollout's per-call cap/);
  });

  void it('Claude Code with thinking enabled and thinking blocks in an earlier turn', async () => {
    const messages = [
      ...(CLAUDE_CODE.body.messages as unknown[]),
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'The user greets me.', signature: 'sig' },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'text', text: 'Hi!' },
        ],
      },
      { role: 'user', content: 'and again' },
    ];
    const r = await replay(CLAUDE_CODE, {
      ...CLAUDE_CODE.body,
      thinking: { type: 'enabled', budget_tokens: 31999 },
      max_tokens: 32000,
      messages,
    });
    assert.equal(r.status, 200, r.text);
    const sent = lastUpstream();
    assert.deepEqual(sent.messages.at(-2), { role: 'assistant', content: 'Hi!' });
    assert.match(
      r.spans[0]!.translation.join('\n'),
      /thinking \(enabled\) dropped.*\n2 thinking block\(s\) of earlier turns dropped/s,
    );
  });

  void it('Codex 0.171.0: a 200 Responses stream, namespace flattened, web_search dropped and recorded', async () => {
    const r = await replay(CODEX);
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^text\/event-stream/);
    const types = r.events.map((e) => e.event);
    assert.deepEqual(types.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    assert.equal(types.at(-1), 'response.completed');
    assert.deepEqual(
      r.events.map((e) => e.data.sequence_number),
      r.events.map((_, i) => i),
    );
    const done = r.events.at(-1)!.data.response as { output_text: string; status: string; store: boolean };
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, 'Hello, world');
    assert.equal(done.store, false);

    const sent = lastUpstream();
    const names = (sent.tools as { function: { name: string } }[]).map((t) => t.function.name);
    const ns = (CODEX.body.tools as { type: string; name: string; tools?: { name: string }[] }[]).find(
      (t) => t.type === 'namespace',
    )!;
    for (const inner of ns.tools!) assert.ok(names.includes(`${ns.name}.${inner.name}`), `${ns.name}.${inner.name}`);
    assert.ok(!names.includes('web_search'));
    assert.equal(sent.parallel_tool_calls, true);
    assert.deepEqual(
      sent.messages.slice(0, 2).map((m) => m.role),
      ['developer', 'developer'],
    );

    const span = r.spans[0]!;
    assert.equal(span.api, 'responses');
    assert.deepEqual(span.request.body, CODEX.body);
    const notes = span.translation.join('\n');
    assert.match(notes, /hosted tool 'web_search' dropped/);
    assert.match(notes, new RegExp(`namespace '${ns.name}' flattened into ${ns.tools!.length}`));
    assert.match(notes, /reasoning\.summary \(auto\) dropped/);
  });

  void it("a run that refuses hosted tools answers Codex's web_search with a 400 naming the tool", async () => {
    const at = (CODEX.body.tools as { type: string }[]).findIndex((t) => t.type === 'web_search');
    const before = upstream.received.length;
    const r = await replay(CODEX, CODEX.body, { hostedTools: 'refuse' });
    assert.equal(r.status, 400, r.text);
    const error = (JSON.parse(r.text) as { error: { param: string; message: string } }).error;
    assert.equal(error.param, `tools.${at}.type`);
    assert.match(error.message, /hosted tool 'web_search' is not supported/);
    assert.equal(upstream.received.length, before, 'nothing reached the model');
    assert.deepEqual(r.spans, []);
  });

  void it("clamps max_tokens to the model's context left when the engine refuses the length, and records it", async () => {
    const refusal = 'max_tokens: prompt (7000 tokens) + max_tokens (4096) exceeds the maximum model length 8192';
    upstream.script.push({ kind: 'status', status: 400, message: refusal });
    const r = await replay(CLAUDE_CODE);
    assert.equal(r.status, 200, r.text);
    assert.equal(lastUpstream().max_tokens, 1192);
    assert.match(
      r.spans[0]!.translation.join('\n'),
      /max_tokens 4096 clamped to 1192: the model's context \(8192\) minus the prompt \(7000\)/,
    );
    assert.equal((r.spans[0]!.upstreamRequest as { max_tokens: number }).max_tokens, 1192);

    // A prompt longer than the whole context is the agent's to shorten: the engine's 400 reaches it.
    upstream.script.push({
      kind: 'status',
      status: 400,
      message: 'max_tokens: prompt (9000 tokens) + max_tokens (4096) exceeds the maximum model length 8192',
    });
    const long = await replay(CLAUDE_CODE);
    assert.equal(long.status, 400, long.text);
    assert.equal((JSON.parse(long.text) as { type: string }).type, 'error');
  });
});
