import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../../src/gateway/routes/openai-error.js';
import { parseResponsesRequest, responsesToChat } from '../../../src/gateway/agent-apis/responses-request.js';
import { chatToResponse } from '../../../src/gateway/agent-apis/responses-response.js';
import { ResponsesStreamTranslator } from '../../../src/gateway/agent-apis/responses-stream.js';
import { chatAnswer, chatChunks, parseSse } from './chat-fixtures.js';

const translate = (body: unknown) => responsesToChat(parseResponsesRequest(body)) as unknown as Record<string, unknown>;

// The function-calling example of the Responses API docs (platform.openai.com/docs/guides/function-calling).
const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get current temperature for a given location.',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'City and country e.g. Bogotá, Colombia' } },
    required: ['location'],
    additionalProperties: false,
  },
  strict: true,
};
const weatherCall = {
  type: 'function_call',
  id: 'fc_12345xyz',
  call_id: 'call_12345xyz',
  name: 'get_weather',
  arguments: '{"location":"Paris, France"}',
};

function refusedWith(param: string) {
  return (err: unknown) => err instanceof GatewayError && err.statusCode === 400 && err.param === param;
}

void describe('Responses API -> engine chat request', () => {
  void it('instructions and a string input become system and user messages; sampling fields map over', () => {
    const chat = translate({
      model: 'gpt-4.1',
      instructions: 'Talk like a pirate.',
      input: 'Are semicolons optional in JavaScript?',
      max_output_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      stream: true,
      store: false,
      metadata: { k: 'v' },
    });
    assert.deepEqual(chat, {
      model: 'gpt-4.1',
      messages: [
        { role: 'system', content: 'Talk like a pirate.' },
        { role: 'user', content: 'Are semicolons optional in JavaScript?' },
      ],
      max_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      stream: true,
    });
  });

  void it('message items with input_text / output_text parts, developer role, easy messages without a type', () => {
    const chat = translate({
      model: 'm',
      input: [
        { role: 'developer', content: 'Be brief.' },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Hi ' },
            { type: 'input_text', text: 'there' },
          ],
        },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hello!', annotations: [] }],
        },
      ],
    });
    assert.deepEqual(chat.messages, [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: 'Hi there' },
      { role: 'assistant', content: 'Hello!' },
    ]);
  });

  void it("tool round trip from the docs: function tools, the model's function_call and the agent's function_call_output", () => {
    const chat = translate({
      model: 'gpt-4.1',
      tools: [weatherTool],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      input: [
        { role: 'user', content: "What's the weather like in Paris today?" },
        weatherCall,
        { type: 'function_call_output', call_id: 'call_12345xyz', output: '14' },
      ],
    });
    assert.deepEqual(chat.tools, [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: weatherTool.description,
          parameters: weatherTool.parameters,
          strict: true,
        },
      },
    ]);
    assert.equal(chat.tool_choice, 'auto');
    assert.equal(chat.parallel_tool_calls, false);
    assert.deepEqual(chat.messages, [
      { role: 'user', content: "What's the weather like in Paris today?" },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_12345xyz',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Paris, France"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_12345xyz', content: '14' },
    ]);
  });

  void it('a message followed by function calls is one assistant turn; a named tool_choice maps to chat', () => {
    const chat = translate({
      model: 'm',
      tools: [weatherTool],
      tool_choice: { type: 'function', name: 'get_weather' },
      input: [
        { role: 'user', content: 'q' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        weatherCall,
        { ...weatherCall, call_id: 'call_2' },
      ],
    });
    assert.deepEqual(chat.tool_choice, { type: 'function', function: { name: 'get_weather' } });
    const turn = (chat.messages as { content: unknown; tool_calls: { id: string }[] }[])[1]!;
    assert.equal(turn.content, 'Checking.');
    assert.deepEqual(
      turn.tool_calls.map((c) => c.id),
      ['call_12345xyz', 'call_2'],
    );
  });

  void it('refuses what it cannot honour with a 400 naming the field', () => {
    const base = { model: 'm', input: 'hi' };
    assert.throws(() => translate({ ...base, tools: [{ type: 'function' }] }), refusedWith('tools.0.name'));
    assert.throws(
      () => translate({ ...base, tools: [{ type: 'namespace', name: 'ns', tools: 'x' }] }),
      refusedWith('tools.0.tools'),
    );
    assert.throws(() => translate({ ...base, previous_response_id: 'resp_1' }), refusedWith('previous_response_id'));
    assert.throws(() => translate({ ...base, background: true }), refusedWith('background'));
    assert.throws(() => translate({ ...base, conversation: 'conv_1' }), refusedWith('conversation'));
    assert.throws(() => translate({ ...base, include: ['no.such.includable'] }), refusedWith('include.0'));
    assert.throws(() => translate({ ...base, include: 'x' }), refusedWith('include'));
    // Types that name Object.prototype members are unknown types, not a crash.
    assert.throws(() => translate({ model: 'm', input: [{ type: 'constructor' }] }), refusedWith('input.0.type'));
    assert.doesNotThrow(() => translate({ ...base, tools: [{ type: 'toString' }, { type: '__proto__' }] }));
    assert.throws(() => translate({ ...base, reasoning: { summary: 'verbose' } }), refusedWith('reasoning.summary'));
    assert.throws(
      () =>
        translate({
          model: 'm',
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_text', text: 'see' },
                { type: 'input_image', image_url: 'https://x/y.png' },
              ],
            },
          ],
        }),
      refusedWith('input.0.content.1.type'),
    );
    assert.throws(
      () => translate({ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] }),
      refusedWith('input.0.type'),
    );
    assert.throws(() => translate({ input: 'hi' }), refusedWith('model'));
    assert.throws(() => translate({ model: 'm', input: 'hi', max_output_tokens: 0 }), refusedWith('max_output_tokens'));
    assert.throws(() => translate({ model: 'm', input: [] }), refusedWith('input'));
    // Empty, background-free and disabled settings are fine.
    assert.doesNotThrow(() =>
      translate({
        ...base,
        include: [],
        background: false,
        truncation: 'disabled',
        previous_response_id: null,
        reasoning: { summary: 'auto' },
      }),
    );
  });
});

void describe('engine chat answer -> Responses API answer', () => {
  const req = parseResponsesRequest({
    model: 'gpt-4.1',
    input: 'Name one colour.',
    instructions: 'Be brief.',
    metadata: { run: 'a' },
    store: false,
  });

  void it('text: one completed message with output_text, usage in Responses terms, settings echoed', () => {
    const res = chatToResponse(chatAnswer(), req);
    assert.equal(res.id, 'resp_abc123');
    assert.equal(res.object, 'response');
    assert.equal(res.status, 'completed');
    assert.equal(res.incomplete_details, null);
    assert.deepEqual(res.output, [
      {
        type: 'message',
        id: 'msg_abc123',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Blue.', annotations: [] }],
      },
    ]);
    assert.equal(res.output_text, 'Blue.');
    assert.deepEqual(res.usage, {
      input_tokens: 11,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 14,
    });
    assert.equal(res.instructions, 'Be brief.');
    assert.deepEqual(res.metadata, { run: 'a' });
    assert.equal(res.model, 'smollm2-135m-instruct');
  });

  void it('stop reasons: length -> incomplete (max_output_tokens); tool_calls -> completed with function_call items', () => {
    const cut = chatToResponse(chatAnswer({ finish: 'length' }), req);
    assert.equal(cut.status, 'incomplete');
    assert.deepEqual(cut.incomplete_details, { reason: 'max_output_tokens' });
    const calls = chatToResponse(
      chatAnswer({
        content: null,
        finish: 'tool_calls',
        toolCalls: [{ id: 'call_12345xyz', name: 'get_weather', arguments: '{"location":"Paris, France"}' }],
      }),
      req,
    );
    assert.equal(calls.status, 'completed');
    assert.deepEqual(calls.output, [
      {
        type: 'function_call',
        id: 'fc_abc123_0',
        call_id: 'call_12345xyz',
        name: 'get_weather',
        arguments: '{"location":"Paris, France"}',
        status: 'completed',
      },
    ]);
    // The call the agent sends back next turn lands as the same chat tool call.
    const next = translate({
      model: 'm',
      input: [
        { role: 'user', content: 'q' },
        ...calls.output,
        { type: 'function_call_output', call_id: 'call_12345xyz', output: '14' },
      ],
    });
    assert.deepEqual((next.messages as { tool_calls?: unknown }[])[1]!.tool_calls, [
      {
        id: 'call_12345xyz',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"location":"Paris, France"}' },
      },
    ]);
  });
});

void describe('engine chat stream -> Responses API events', () => {
  const req = parseResponsesRequest({ model: 'gpt-4.1', input: 'Count.', stream: true });
  const run = (chunks: ReturnType<typeof chatChunks>) => {
    const t = new ResponsesStreamTranslator(req);
    return parseSse(chunks.map((c) => t.chunk(c)).join('') + t.end(null));
  };

  void it('text: the documented event sequence, numbered from 0, ending in response.completed with usage', () => {
    const events = run(chatChunks(['One', ', two']));
    assert.deepEqual(
      events.map(([e]) => e),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.deepEqual(
      events.map(([, d]) => d.sequence_number),
      events.map((_, i) => i),
    );
    for (const [e, d] of events) assert.equal(d.type, e);
    assert.deepEqual(
      events.filter(([e]) => e === 'response.output_text.delta').map(([, d]) => d.delta),
      ['One', ', two'],
    );
    const done = events.at(-1)![1].response as {
      status: string;
      output: { content: { text: string }[] }[];
      usage: { output_tokens: number };
    };
    assert.equal(done.status, 'completed');
    assert.equal(done.output[0]!.content[0]!.text, 'One, two');
    assert.equal(done.usage.output_tokens, 3);
    assert.equal((events[0]![1].response as { status: string }).status, 'in_progress');
  });

  void it('tool calls: the text message closes, a function_call item streams its arguments; length ends in response.incomplete', () => {
    const events = run(
      chatChunks(['Let me check.'], {
        finish: 'tool_calls',
        toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"location":"Paris"}' }],
      }),
    );
    const names = events.map(([e]) => e);
    assert.deepEqual(names.slice(-5), [
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.ok(
      names.indexOf('response.output_item.done') < names.lastIndexOf('response.output_item.added'),
      'message item closed before the call opens',
    );
    const added = events.filter(([e]) => e === 'response.output_item.added').map(([, d]) => d.output_index);
    assert.deepEqual(added, [0, 1]);
    const output = (events.at(-1)![1].response as { output: { type: string; call_id?: string; arguments?: string }[] })
      .output;
    assert.deepEqual(
      output.map((o) => o.type),
      ['message', 'function_call'],
    );
    assert.equal(output[1]!.call_id, 'call_1');
    assert.equal(output[1]!.arguments, '{"location":"Paris"}');

    const cut = run(chatChunks(['One'], { finish: 'length' }));
    assert.equal(cut.at(-1)![0], 'response.incomplete');
    assert.deepEqual((cut.at(-1)![1].response as { incomplete_details: unknown }).incomplete_details, {
      reason: 'max_output_tokens',
    });
  });

  void it('a failed stream ends with an error event, not response.completed', () => {
    const t = new ResponsesStreamTranslator(req);
    const events = parseSse(
      chatChunks(['One'])
        .slice(0, 2)
        .map((c) => t.chunk(c))
        .join('') + t.end({ message: 'upstream stream ended before [DONE]' }),
    );
    assert.equal(events.at(-1)![0], 'error');
    assert.equal(events.at(-1)![1].message, 'upstream stream ended before [DONE]');
    assert.ok(!events.some(([e]) => e === 'response.completed'));
  });
});
