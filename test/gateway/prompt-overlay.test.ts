import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/gateway/routes/openai-error.js';
import { applyPromptOverlay } from '../../src/gateway/upstream/prompt-overlay.js';
import { renderSystemPrompt, type OverlayText } from '../../src/prompts/system-prompt.js';

const chat = (messages: unknown[]) => ({ model: 'agent-model', temperature: 0.3, messages });
const frozen = <T>(value: T): T => {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) frozen(v);
    Object.freeze(value);
  }
  return value;
};

void describe('applyPromptOverlay', () => {
  const user = { role: 'user', content: 'What is 2+3?' };
  const system = { role: 'system', content: 'You are a calculator.' };

  void it('replace: the system message becomes the rendered template, {{original}} being the agent prompt', () => {
    const body = frozen(chat([system, user]));
    const out = applyPromptOverlay(body, 'chat.completions', {
      mode: 'replace',
      template: 'Be exact. {{original}} Answer with a number.',
    });
    assert.deepEqual(out.messages, [
      { role: 'system', content: 'Be exact. You are a calculator. Answer with a number.' },
      user,
    ]);
    assert.equal(out.temperature, 0.3);
    assert.equal(out.model, 'agent-model');
  });

  void it('prepend and append put the rendered text before / after the agent prompt with a blank line', () => {
    const body = frozen(chat([system, user]));
    assert.equal(
      (
        applyPromptOverlay(body, 'chat.completions', { mode: 'prepend', template: 'Think first.' }).messages[0] as {
          content: string;
        }
      ).content,
      'Think first.\n\nYou are a calculator.',
    );
    assert.equal(
      (
        applyPromptOverlay(body, 'chat.completions', { mode: 'append', template: 'Example: 1+1 = 2' }).messages[0] as {
          content: string;
        }
      ).content,
      'You are a calculator.\n\nExample: 1+1 = 2',
    );
  });

  void it('renders every {{original}} and keeps $-patterns of the agent prompt literal', () => {
    const overlay: OverlayText = { mode: 'replace', template: '[{{original}}] then [{{original}}]' };
    assert.equal(renderSystemPrompt(overlay, 'costs $& and $1'), '[costs $& and $1] then [costs $& and $1]');
  });

  void it('inserts a system message at index 0 when the agent sent none ({{original}} is empty)', () => {
    const body = frozen(chat([user]));
    for (const mode of ['replace', 'prepend', 'append'] as const) {
      const out = applyPromptOverlay(body, 'chat.completions', { mode, template: 'Rules:{{original}} be brief.' });
      assert.deepEqual(out.messages, [{ role: 'system', content: 'Rules: be brief.' }, user], mode);
    }
  });

  void it('uses the first system or developer message, joins its text parts, keeps its other fields and all other messages', () => {
    const developer = {
      role: 'developer',
      name: 'ops',
      content: [
        { type: 'text', text: 'Use tools.' },
        { type: 'image_url', image_url: { url: 'x' } },
        { type: 'text', text: ' Be terse.' },
      ],
    };
    const later = { role: 'system', content: 'second system message' };
    const assistant = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc', arguments: '{}' } }],
    };
    const body = frozen(chat([user, developer, assistant, later]));
    const out = applyPromptOverlay(body, 'chat.completions', { mode: 'prepend', template: 'New rule.' });
    assert.deepEqual(out.messages, [
      user,
      { role: 'developer', name: 'ops', content: 'New rule.\n\nUse tools. Be terse.' },
      assistant,
      later,
    ]);
    assert.equal(out.messages[0], user, 'untouched messages are the same objects');
  });

  void it('never mutates the agent body (frozen input, deep-equal before and after)', () => {
    const body = chat([system, user]);
    const snapshot = structuredClone(body);
    const out = applyPromptOverlay(frozen(body), 'chat.completions', { mode: 'replace', template: 'X' });
    assert.deepEqual(body, snapshot);
    assert.notEqual(out, body);
    assert.notEqual(out.messages, body.messages);
  });

  void it('completions: the rendered text and a blank line go before a string prompt (or each string of a list)', () => {
    const overlay: OverlayText = { mode: 'append', template: 'Answer briefly.{{original}}' };
    const one = applyPromptOverlay(frozen({ model: 'm', prompt: '2+3=' }), 'completions', overlay);
    assert.equal(one.prompt, 'Answer briefly.\n\n2+3=');
    const many = applyPromptOverlay(frozen({ model: 'm', prompt: ['a', 'b'] }), 'completions', overlay);
    assert.deepEqual(many.prompt, ['Answer briefly.\n\na', 'Answer briefly.\n\nb']);
  });

  void it('completions with token-id prompts are refused with a 400 naming prompt', () => {
    assert.throws(
      () => applyPromptOverlay({ model: 'm', prompt: [1, 2, 3] }, 'completions', { mode: 'replace', template: 'T' }),
      (e: unknown) =>
        e instanceof GatewayError &&
        e.statusCode === 400 &&
        e.param === 'prompt' &&
        e.code === 'overlay_needs_text_prompt',
    );
  });

  void it('no overlay returns the same body', () => {
    const body = chat([user]);
    assert.equal(applyPromptOverlay(body, 'chat.completions', null), body);
  });
});
