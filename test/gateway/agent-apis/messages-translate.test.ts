import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../../src/gateway/routes/openai-error.js';
import { anthropicErrorBody, speaksAnthropic } from '../../../src/gateway/agent-apis/anthropic-error.js';
import {
  messagesToChat,
  messagesTranslationNotes,
  parseMessagesRequest,
} from '../../../src/gateway/agent-apis/messages-request.js';
import { chatToMessage } from '../../../src/gateway/agent-apis/messages-response.js';
import { MessagesStreamTranslator } from '../../../src/gateway/agent-apis/messages-stream.js';
import { chatAnswer, chatChunks, parseSse } from './chat-fixtures.js';

const translate = (body: unknown) => messagesToChat(parseMessagesRequest(body)) as unknown as Record<string, unknown>;

// The tool-use example of the Messages API docs (docs.anthropic.com, "Tool use with Claude").
const weatherTool = {
  name: 'get_weather',
  description: 'Get the current weather in a given location',
  input_schema: {
    type: 'object',
    properties: { location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' } },
    required: ['location'],
  },
};
const toolTurn = [
  { role: 'user', content: "What's the weather like in San Francisco?" },
  {
    role: 'assistant',
    content: [
      { type: 'text', text: "I'll check the current weather in San Francisco for you." },
      {
        type: 'tool_use',
        id: 'toolu_01A09q90qw90lq917835lq9',
        name: 'get_weather',
        input: { location: 'San Francisco, CA' },
      },
    ],
  },
  {
    role: 'user',
    content: [{ type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees' }],
  },
];

function refusedWith(param: string) {
  return (err: unknown) => err instanceof GatewayError && err.statusCode === 400 && err.param === param;
}

void describe('Messages API -> engine chat request', () => {
  void it('system as a string or as text blocks; max_tokens, stop_sequences and sampling map over', () => {
    const chat = translate({
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      system: 'You are a pirate.',
      messages: [{ role: 'user', content: 'Hello, Claude' }],
      stop_sequences: ['\n\nHuman:'],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 5,
      stream: true,
      metadata: { user_id: 'u1' },
    });
    assert.deepEqual(chat, {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      stop: ['\n\nHuman:'],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 5,
      stream: true,
      messages: [
        { role: 'system', content: 'You are a pirate.' },
        { role: 'user', content: 'Hello, Claude' },
      ],
    });
    const blocks = translate({
      model: 'm',
      max_tokens: 5,
      system: [
        { type: 'text', text: 'One.' },
        { type: 'text', text: 'Two.', cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    });
    assert.deepEqual(blocks.messages, [
      { role: 'system', content: 'One.\nTwo.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  void it("tool round trip from the docs: input_schema tools, the model's tool_use and the agent's tool_result", () => {
    const chat = translate({
      model: 'm',
      max_tokens: 1024,
      tools: [weatherTool],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: toolTurn,
    });
    assert.deepEqual(chat.tools, [
      {
        type: 'function',
        function: { name: 'get_weather', description: weatherTool.description, parameters: weatherTool.input_schema },
      },
    ]);
    assert.equal(chat.tool_choice, 'required');
    assert.equal(chat.parallel_tool_calls, false);
    assert.deepEqual(chat.messages, [
      { role: 'user', content: "What's the weather like in San Francisco?" },
      {
        role: 'assistant',
        content: "I'll check the current weather in San Francisco for you.",
        tool_calls: [
          {
            id: 'toolu_01A09q90qw90lq917835lq9',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees' },
    ]);
    assert.deepEqual(
      translate({
        model: 'm',
        max_tokens: 5,
        tools: [weatherTool],
        tool_choice: { type: 'tool', name: 'get_weather' },
        messages: toolTurn.slice(0, 1),
      }).tool_choice,
      { type: 'function', function: { name: 'get_weather' } },
    );
  });

  void it("Claude Code's settings: thinking, context edits, effort and cache hints accepted, dropped and noted", () => {
    const body = {
      model: 'claude-opus-4-8',
      max_tokens: 64000,
      thinking: { type: 'enabled', budget_tokens: 31999 },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'high' },
      metadata: { user_id: '{"device_id":"d","session_id":"s"}' },
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
        { role: 'system', content: 'The user prefers French.' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Greet.', signature: 'sig' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Salut.' },
          ],
        },
        { role: 'user', content: 'again' },
      ],
    };
    const req = parseMessagesRequest(body);
    const chat = messagesToChat(req) as unknown as Record<string, unknown>;
    assert.deepEqual(chat.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'The user prefers French.' },
      { role: 'assistant', content: 'Salut.' },
      { role: 'user', content: 'again' },
    ]);
    for (const dropped of ['thinking', 'context_management', 'output_config', 'metadata'])
      assert.ok(!(dropped in chat));
    assert.deepEqual(messagesTranslationNotes(req), [
      'thinking (enabled) dropped: the policy answers without thinking blocks',
      'context_management dropped: no server-side context edits',
      'output_config.effort (high) dropped',
      '2 thinking block(s) of earlier turns dropped',
      'cache_control dropped: the engine caches prefixes on its own',
    ]);
    assert.deepEqual(
      messagesTranslationNotes(parseMessagesRequest({ ...body, thinking: { type: 'disabled' } })).length,
      4,
    );
  });

  void it('refuses what it cannot honour with a 400 naming the field', () => {
    const base = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    assert.throws(
      () => translate({ ...base, messages: [{ role: 'system', content: [{ type: 'image', source: {} }] }] }),
      refusedWith('messages.0.content.0.type'),
    );
    assert.throws(
      () => translate({ ...base, messages: [{ role: 'user', content: [{ type: 'thinking', thinking: 'x' }] }] }),
      refusedWith('messages.0.content.0.type'),
    );
    assert.throws(
      () => translate({ ...base, messages: [{ role: 'user', content: [{ type: 'constructor' }] }] }),
      refusedWith('messages.0.content.0.type'),
    );
    assert.throws(
      () => translate({ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }] }),
      refusedWith('tools.0.type'),
    );
    assert.throws(() => translate({ ...base, thinking: { type: 'sometimes' } }), refusedWith('thinking.type'));
    assert.throws(
      () =>
        translate({
          ...base,
          messages: [
            {
              role: 'user',
              content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }],
            },
          ],
        }),
      refusedWith('messages.0.content.0.type'),
    );
    assert.throws(
      () =>
        translate({
          ...base,
          messages: [
            {
              role: 'user',
              content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: {} }] }],
            },
          ],
        }),
      refusedWith('messages.0.content.0.content.0.type'),
    );
    assert.throws(() => translate({ model: 'm', messages: base.messages }), refusedWith('max_tokens'));
    assert.throws(
      () => translate({ ...base, messages: [{ role: 'tool', content: 'x' }] }),
      refusedWith('messages.0.role'),
    );
    assert.throws(() => translate({ ...base, temperature: 1.5 }), refusedWith('temperature'));
    assert.doesNotThrow(() => translate({ ...base, thinking: { type: 'disabled' } }));
  });
});

void describe('engine chat answer -> Messages API answer, stop reasons', () => {
  const req = parseMessagesRequest({
    model: 'claude-x',
    max_tokens: 10,
    messages: [{ role: 'user', content: 'Count.' }],
    stop_sequences: ['3'],
  });

  void it("end_turn, max_tokens, stop_sequence (from the engine's stop_reason), tool_use", () => {
    const msg = chatToMessage(chatAnswer(), req);
    assert.equal(msg.id, 'msg_abc123');
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Blue.' }]);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.equal(msg.stop_sequence, null);
    assert.equal(msg.usage.input_tokens, 11);
    assert.equal(msg.usage.output_tokens, 3);
    assert.equal(chatToMessage(chatAnswer({ finish: 'length' }), req).stop_reason, 'max_tokens');
    const stopped = chatToMessage(chatAnswer({ content: '1, 2, ', stopReason: '3' }), req);
    assert.equal(stopped.stop_reason, 'stop_sequence');
    assert.equal(stopped.stop_sequence, '3');
    // An EOS token id in stop_reason is not a stop sequence.
    assert.equal(chatToMessage(chatAnswer({ stopReason: 2 as unknown as string }), req).stop_reason, 'end_turn');
    const tool = chatToMessage(
      chatAnswer({
        content: null,
        finish: 'tool_calls',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"location":"San Francisco, CA"}' }],
      }),
      req,
    );
    assert.equal(tool.stop_reason, 'tool_use');
    assert.deepEqual(tool.content, [
      {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'get_weather',
        input: { location: 'San Francisco, CA' },
        caller: { type: 'direct' },
      },
    ]);
    // The tool_use block goes back as the same chat tool call.
    const next = translate({
      model: 'm',
      max_tokens: 5,
      messages: [
        toolTurn[0],
        { role: 'assistant', content: tool.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '15 degrees' }] }],
        },
      ],
    });
    assert.deepEqual(next.messages, [
      { role: 'user', content: "What's the weather like in San Francisco?" },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'toolu_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '15 degrees' },
    ]);
  });

  void it('tool arguments that are not a JSON object are kept, not dropped', () => {
    const msg = chatToMessage(
      chatAnswer({ content: null, finish: 'tool_calls', toolCalls: [{ id: 't', name: 'f', arguments: '{"a": 1' }] }),
      req,
    );
    assert.deepEqual((msg.content[0] as { input: unknown }).input, { _unparsed_arguments: '{"a": 1' });
  });
});

void describe('engine chat stream -> Messages API events', () => {
  const req = parseMessagesRequest({
    model: 'claude-x',
    max_tokens: 10,
    messages: [{ role: 'user', content: 'Count.' }],
    stop_sequences: ['3'],
    stream: true,
  });
  const run = (chunks: ReturnType<typeof chatChunks>) => {
    const t = new MessagesStreamTranslator(req);
    return parseSse(chunks.map((c) => t.chunk(c)).join('') + t.end(null));
  };

  void it('text: message_start, ping, one text block of text_deltas, message_delta with stop_reason and usage, message_stop', () => {
    const events = run(chatChunks(['1, ', '2, '], { stopReason: '3' }));
    assert.deepEqual(
      events.map(([e]) => e),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    for (const [e, d] of events) assert.equal(d.type, e);
    assert.deepEqual(
      events.filter(([e]) => e === 'content_block_delta').map(([, d]) => d.delta),
      [
        { type: 'text_delta', text: '1, ' },
        { type: 'text_delta', text: '2, ' },
      ],
    );
    const delta = events[6]![1] as {
      delta: { stop_reason: string; stop_sequence: string };
      usage: { output_tokens: number; input_tokens: number };
    };
    assert.equal(delta.delta.stop_reason, 'stop_sequence');
    assert.equal(delta.delta.stop_sequence, '3');
    assert.equal(delta.usage.output_tokens, 3);
    assert.equal(delta.usage.input_tokens, 11);
    assert.equal((events[0]![1].message as { id: string }).id, 'msg_abc123');
  });

  void it('tool use: the text block closes, a tool_use block streams input_json_delta; stop_reason tool_use', () => {
    const events = run(
      chatChunks(['Checking.'], {
        finish: 'tool_calls',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"location":"SF"}' }],
      }),
    );
    assert.deepEqual(
      events.map(([e]) => e),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.deepEqual(events[5]![1], {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {}, caller: { type: 'direct' } },
    });
    assert.deepEqual(events[6]![1].delta, { type: 'input_json_delta', partial_json: '{"location":"SF"}' });
    assert.equal((events[8]![1].delta as { stop_reason: string }).stop_reason, 'tool_use');
    const cut = run(chatChunks(['x'], { finish: 'length' }));
    assert.equal((cut.at(-2)![1].delta as { stop_reason: string }).stop_reason, 'max_tokens');
  });

  void it("a failed stream ends with an error event in Anthropic's shape", () => {
    const t = new MessagesStreamTranslator(req);
    const events = parseSse(t.chunk(chatChunks(['x'])[0]!) + t.end({ message: 'upstream stream ended before [DONE]' }));
    assert.deepEqual(events.at(-1), [
      'error',
      { type: 'error', error: { type: 'api_error', message: 'upstream stream ended before [DONE]' }, request_id: null },
    ]);
  });
});

void describe('Anthropic error shape', () => {
  void it('maps statuses to the types the SDKs expect and recognises the Messages paths', () => {
    assert.deepEqual(anthropicErrorBody(400, 'bad').error, { type: 'invalid_request_error', message: 'bad' });
    assert.equal(anthropicErrorBody(401, '').error.type, 'authentication_error');
    assert.equal(anthropicErrorBody(404, '').error.type, 'not_found_error');
    assert.equal(anthropicErrorBody(413, '').error.type, 'request_too_large');
    assert.equal(anthropicErrorBody(429, '').error.type, 'rate_limit_error');
    assert.equal(anthropicErrorBody(502, '').error.type, 'api_error');
    assert.ok(speaksAnthropic('/r/tok/v1/messages'));
    assert.ok(speaksAnthropic('/r/tok/v1/messages/count_tokens?beta=true'));
    assert.ok(!speaksAnthropic('/r/tok/v1/chat/completions'));
    assert.ok(!speaksAnthropic('/r/tok/v1/messagesx'));
  });
});
