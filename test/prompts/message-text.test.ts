import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { digestFromSpans } from '../../src/apo/rollout-digest.js';
import type { Span } from '../../src/contracts/span.js';
import { translateMessages, translateResponses } from '../../src/gateway/agent-apis/translated-call.js';
import { applyPromptOverlay } from '../../src/gateway/upstream/prompt-overlay.js';
import { modelText, readableText, requestMessages, RESPONSES_TEXT_PARTS } from '../../src/prompts/message-text.js';
import { agentSystemPrompt, type AgentApi } from '../../src/prompts/system-prompt.js';
import { spanToTurn } from '../../src/report/transcript.js';
import { span } from '../report/synthetic-run.js';

const parts = (...texts: string[]) => texts.map((text) => ({ type: 'text', text }));

/** Requests as the SDKs send them (docs/agent-apis.md), each with the system prompt the gateway's overlay reads. */
const REQUESTS: { name: string; api: AgentApi; body: Record<string, unknown>; system: string | null }[] = [
  {
    name: 'chat, string content',
    api: 'chat.completions',
    body: {
      model: 'm',
      messages: [
        { role: 'system', content: 'You are a calculator.' },
        { role: 'user', content: 'hi' },
      ],
    },
    system: 'You are a calculator.',
  },
  {
    name: 'chat, text parts',
    api: 'chat.completions',
    body: {
      model: 'm',
      messages: [
        { role: 'system', content: parts('You are', ' a calculator.') },
        { role: 'user', content: parts('2+2?') },
      ],
    },
    system: 'You are a calculator.',
  },
  {
    name: 'chat, developer role',
    api: 'chat.completions',
    body: {
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'developer', content: 'Be brief.' },
      ],
    },
    system: 'Be brief.',
  },
  {
    name: 'chat, no system message',
    api: 'chat.completions',
    body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    system: null,
  },
  {
    name: 'Messages, system string',
    api: 'messages',
    body: { model: 'm', max_tokens: 5, system: 'Be brief.', messages: [{ role: 'user', content: 'hi' }] },
    system: 'Be brief.',
  },
  {
    name: 'Messages, system blocks',
    api: 'messages',
    system: 'You are a calculator.\nAnswer with a number.',
    body: {
      model: 'm',
      max_tokens: 5,
      system: [
        { type: 'text', text: 'You are a calculator.' },
        { type: 'text', text: 'Answer with a number.', cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    },
  },
  {
    name: 'Messages, no system',
    api: 'messages',
    body: { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    system: null,
  },
  {
    name: 'Responses, instructions',
    api: 'responses',
    body: {
      model: 'm',
      instructions: 'Be brief.',
      input: [
        { role: 'developer', content: 'ignored' },
        { role: 'user', content: 'hi' },
      ],
    },
    system: 'Be brief.',
  },
  {
    name: 'Responses, developer item with input_text parts',
    api: 'responses',
    system: 'Be brief.',
    body: {
      model: 'm',
      input: [
        {
          type: 'message',
          role: 'developer',
          content: [
            { type: 'input_text', text: 'Be' },
            { type: 'input_text', text: ' brief.' },
          ],
        },
        { role: 'user', content: 'hi' },
      ],
    },
  },
  { name: 'Responses, input string', api: 'responses', body: { model: 'm', input: 'hi' }, system: null },
];

/** The chat call the gateway makes of an agent's request, with a marker overlay applied: what the model is sent. */
function gatewaySystemMessage(body: Record<string, unknown>, api: AgentApi): string {
  const chat =
    api === 'responses' ? translateResponses(body).chat : api === 'messages' ? translateMessages(body).chat : body;
  const sent = applyPromptOverlay(chat, 'chat.completions', { mode: 'replace', template: '<<{{original}}>>' });
  const messages = sent.messages as { role: string; content: string }[];
  return messages.find((m) => m.role === 'system' || m.role === 'developer')!.content;
}

const spanOf = (body: Record<string, unknown>, api: AgentApi): Span => {
  const s = span('r0', 0, [], '42');
  return { ...s, api, request: { body, headers: {} } };
};

describe("message text: the model's view and the reader's view", () => {
  it('modelText joins text parts with nothing between (as the model server renders them); other parts are not text', () => {
    assert.equal(modelText('plain'), 'plain');
    assert.equal(modelText(parts('a', 'b')), 'ab');
    assert.equal(modelText([...parts('a'), { type: 'image_url', image_url: { url: 'data:' } }, ...parts('b')]), 'ab');
    assert.equal(
      modelText([
        { type: 'input_text', text: 'a' },
        { type: 'output_text', text: 'b' },
      ]),
      '',
      'Responses part types are not chat text',
    );
    assert.equal(
      modelText(
        [
          { type: 'input_text', text: 'a' },
          { type: 'output_text', text: 'b' },
        ],
        RESPONSES_TEXT_PARTS,
      ),
      'ab',
    );
    assert.equal(modelText(null), '');
  });

  it('readableText puts parts on their own lines and shows what is not text as JSON', () => {
    assert.equal(readableText(parts('a', 'b')), 'a\nb');
    assert.equal(
      readableText([...parts('see'), { type: 'image_url', image_url: { url: 'x' } }]),
      'see\n{"type":"image_url","image_url":{"url":"x"}}',
    );
    assert.equal(readableText(null), '');
    assert.equal(readableText({ odd: 1 }), '{"odd":1}');
  });

  it("requestMessages reads each API's request as chat messages", () => {
    assert.deepEqual(requestMessages(REQUESTS[1]!.body), [
      { role: 'system', content: 'You are\n a calculator.' },
      { role: 'user', content: '2+2?' },
    ]);
    assert.deepEqual(
      requestMessages(REQUESTS[5]!.body).map((m) => m.role),
      ['system', 'user'],
    );
    assert.deepEqual(requestMessages(REQUESTS[8]!.body), [
      { role: 'developer', content: 'Be\n brief.' },
      { role: 'user', content: 'hi' },
    ]);
  });
});

describe('agentSystemPrompt: {{original}} as the gateway renders it, by span.api', () => {
  for (const r of REQUESTS) {
    it(`${r.name}: ${JSON.stringify(r.system)}, the same text the gateway puts in the overlay`, () => {
      assert.equal(agentSystemPrompt(r.body, r.api), r.system);
      assert.equal(gatewaySystemMessage(r.body, r.api), `<<${r.system ?? ''}>>`);
    });
  }

  it('completions prompts have no system prompt', () => {
    assert.equal(agentSystemPrompt({ prompt: 'Q: 2+2' }, 'completions'), null);
  });

  it('the optimiser digest records the prompt the gateway renders, while the report shows the parts as sent', () => {
    const task = { id: 't', input: { q: '2+2' } };
    for (const r of REQUESTS.filter((q) => q.system !== null)) {
      const s = spanOf(r.body, r.api);
      assert.equal(digestFromSpans([s], task, { rolloutId: 'r0', reward: 1 }).agentSystemPrompt, r.system, r.name);
    }
    assert.equal(
      spanToTurn(spanOf(REQUESTS[1]!.body, 'chat.completions')).messages[0]!.content,
      'You are\n a calculator.',
    );
  });
});
