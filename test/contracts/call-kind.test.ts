import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { callKindOf, requestedModelOf } from '../../src/contracts/call-kind.js';

const fixture = (name: string) =>
  (
    JSON.parse(readFileSync(path.join(import.meta.dirname, '../gateway/agent-apis/fixtures', name), 'utf8')) as {
      body: unknown;
    }
  ).body;

void describe('Span.callKind and requestedModel, from the agent request', () => {
  void it("calls the real CLIs' first requests agent turns and keeps the model they asked for", () => {
    const claude = fixture('claude-code-2.1.197-messages.json');
    const codex = fixture('codex-0.171.0-responses.json');
    assert.equal(callKindOf('messages', claude), 'agent_turn');
    assert.equal(callKindOf('responses', codex), 'agent_turn');
    assert.equal(requestedModelOf(claude), 'claude-opus-4-8');
    assert.equal(requestedModelOf(codex), (codex as { model: string }).model);
  });

  void it('tells tool history, JSON output and plain prompts apart in each API', () => {
    const user = { role: 'user', content: 'hi' };
    assert.equal(callKindOf('chat.completions', { messages: [user] }), 'text');
    assert.equal(
      callKindOf('chat.completions', { messages: [user, { role: 'tool', tool_call_id: 'c', content: '1' }] }),
      'agent_turn',
    );
    assert.equal(
      callKindOf('chat.completions', { messages: [user], response_format: { type: 'json_schema', json_schema: {} } }),
      'structured',
    );
    assert.equal(callKindOf('responses', { input: 'hi', text: { format: { type: 'json_schema' } } }), 'structured');
    assert.equal(
      callKindOf('responses', { input: [{ type: 'function_call_output', call_id: 'c', output: '1' }] }),
      'agent_turn',
    );
    assert.equal(
      callKindOf('messages', {
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: '1' }] }],
      }),
      'agent_turn',
    );
    assert.equal(
      callKindOf('messages', { messages: [user], output_config: { format: { type: 'json_schema' } } }),
      'structured',
    );
    assert.equal(callKindOf('completions', { prompt: 'x' }), 'text');
    assert.equal(callKindOf('chat.completions', 'not an object'), 'text');
    assert.equal(requestedModelOf({ model: 7 }), null);
  });
});
