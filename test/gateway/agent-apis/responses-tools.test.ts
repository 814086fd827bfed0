import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResponseCreateParamsBase } from 'openai/resources/responses/responses';
import {
  parseResponsesRequest,
  responsesToChat,
  responsesTranslationNotes,
} from '../../../src/gateway/agent-apis/responses-request.js';
import { chatToResponse } from '../../../src/gateway/agent-apis/responses-response.js';
import { ResponsesStreamTranslator } from '../../../src/gateway/agent-apis/responses-stream.js';
import { chatAnswer, chatChunks, parseSse } from './chat-fixtures.js';

// The tool kinds Codex CLI sends: a namespace of functions, a freeform custom tool, local_shell, a hosted tool.
const tools = [
  {
    type: 'namespace',
    name: 'multi_agent_v1',
    description: 'Sub-agents.',
    tools: [
      {
        type: 'function',
        name: 'spawn_agent',
        parameters: { type: 'object', properties: { task: { type: 'string' } } },
      },
      { type: 'custom', name: 'note', description: 'Free text.' },
    ],
  },
  {
    type: 'custom',
    name: 'apply_patch',
    description: 'Apply a patch.',
    format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' },
  },
  { type: 'local_shell' },
  { type: 'web_search', external_web_access: false },
];
const req = (extra: Record<string, unknown> = {}) =>
  parseResponsesRequest({ model: 'm', input: 'hi', tools, ...extra }) as ResponseCreateParamsBase;
const chatOf = (r: ResponseCreateParamsBase) => responsesToChat(r) as unknown as Record<string, unknown>;

const calls = [
  { id: 'call_1', name: 'multi_agent_v1.spawn_agent', arguments: '{"task":"lint"}' },
  { id: 'call_2', name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' },
  { id: 'call_3', name: 'local_shell', arguments: '{"command":["ls","-l"],"working_directory":"/w"}' },
  { id: 'call_4', name: 'multi_agent_v1.note', arguments: 'not json' },
];
const expected = [
  {
    type: 'function_call',
    id: 'fc_abc123_0',
    call_id: 'call_1',
    name: 'spawn_agent',
    namespace: 'multi_agent_v1',
    arguments: '{"task":"lint"}',
    status: 'completed',
  },
  { type: 'custom_tool_call', id: 'fc_abc123_1', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch' },
  {
    type: 'local_shell_call',
    id: 'fc_abc123_2',
    call_id: 'call_3',
    status: 'completed',
    action: { type: 'exec', command: ['ls', '-l'], env: {}, working_directory: '/w' },
  },
  {
    type: 'custom_tool_call',
    id: 'fc_abc123_3',
    call_id: 'call_4',
    name: 'note',
    namespace: 'multi_agent_v1',
    input: 'not json',
  },
];

void describe('Responses tools of agent CLIs -> engine function tools and back', () => {
  void it('flattens namespaces, makes custom and local_shell tools functions, drops hosted tools and says so', () => {
    const r = req({ tool_choice: 'auto', include: ['reasoning.encrypted_content', 'web_search_call.action.sources'] });
    const chat = chatOf(r);
    const fns = (chat.tools as { function: { name: string; parameters: { required?: string[] } } }[]).map(
      (t) => t.function,
    );
    assert.deepEqual(
      fns.map((f) => f.name),
      ['multi_agent_v1.spawn_agent', 'multi_agent_v1.note', 'apply_patch', 'local_shell'],
    );
    assert.deepEqual(fns[2]!.parameters.required, ['input']);
    assert.deepEqual(fns[3]!.parameters.required, ['command']);
    assert.equal(chat.tool_choice, 'auto');
    assert.deepEqual(responsesTranslationNotes(r), [
      "tools.0: namespace 'multi_agent_v1' flattened into 2 'multi_agent_v1.<tool>' function(s)",
      "tools.3: hosted tool 'web_search' dropped (the policy cannot run it)",
    ]);
    // Only hosted tools: none reach the engine, and neither does a tool choice among them.
    const hosted = chatOf(parseResponsesRequest({ model: 'm', input: 'hi', tools: [tools[3]], tool_choice: 'auto' }));
    assert.equal(hosted.tools, undefined);
    assert.equal(hosted.tool_choice, undefined);
  });

  void it("the engine's calls go back as the agent's own items, whole and streamed", () => {
    const r = req();
    assert.deepEqual(chatToResponse(chatAnswer({ content: null, toolCalls: calls }), r).output, expected);

    const t = new ResponsesStreamTranslator(r);
    const events = parseSse(
      chatChunks([], { toolCalls: calls })
        .map((c) => t.chunk(c))
        .join('') + t.end(null),
    );
    const done = events.filter(([e]) => e === 'response.output_item.done').map(([, d]) => d.item);
    assert.deepEqual(done, expected);
    const added = events
      .filter(([e]) => e === 'response.output_item.added')
      .map(([, d]) => (d.item as { type: string }).type);
    assert.deepEqual(added, ['function_call', 'custom_tool_call', 'local_shell_call', 'custom_tool_call']);
    // Only the function call streams argument deltas; the others arrive whole.
    assert.equal(events.filter(([e]) => e === 'response.function_call_arguments.done').length, 1);
    assert.deepEqual(
      events.map(([, d]) => d.sequence_number),
      events.map((_, i) => i),
    );
  });

  void it("the agent's history of such calls and their outputs becomes the engine's tool turns; reasoning is dropped", () => {
    const r = req({
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAA' },
        { type: 'function_call', call_id: 'c1', name: 'spawn_agent', namespace: 'multi_agent_v1', arguments: '{}' },
        { type: 'custom_tool_call', call_id: 'c2', name: 'apply_patch', input: 'P' },
        {
          type: 'local_shell_call',
          id: 'ls_1',
          call_id: 'c3',
          status: 'completed',
          action: { type: 'exec', command: ['ls'], env: {} },
        },
        { type: 'function_call_output', call_id: 'c1', output: 'spawned' },
        { type: 'custom_tool_call_output', call_id: 'c2', output: 'patched' },
        { type: 'local_shell_call_output', id: 'c3', output: 'a.txt' },
      ],
    });
    const messages = chatOf(r).messages as {
      role: string;
      content?: unknown;
      tool_calls?: { function: { name: string; arguments: string } }[];
      tool_call_id?: string;
    }[];
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'tool', 'tool', 'tool'],
    );
    assert.deepEqual(
      messages[1]!.tool_calls!.map((c) => [c.function.name, c.function.arguments]),
      [
        ['multi_agent_v1.spawn_agent', '{}'],
        ['apply_patch', '{"input":"P"}'],
        ['local_shell', '{"command":["ls"]}'],
      ],
    );
    assert.deepEqual(
      messages.slice(2).map((m) => [m.tool_call_id, m.content]),
      [
        ['c1', 'spawned'],
        ['c2', 'patched'],
        ['c3', 'a.txt'],
      ],
    );
    assert.match(responsesTranslationNotes(r).join('\n'), /1 reasoning item\(s\) of earlier turns dropped/);
  });
});
