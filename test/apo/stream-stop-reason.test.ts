import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StreamAssembler } from '../../src/storage/stream-assembler.js';

const head = { id: 'chatcmpl-1', created: 1, model: 'policy', system_fingerprint: 'policy@base' };

/** Chunks as Volt's server (and vLLM) stream a chat choice cut at a stop string: stop_reason only on the last one. */
function chatChunks(stopReason: unknown): unknown[] {
  return [
    {
      ...head,
      object: 'chat.completion.chunk',
      prompt_token_ids: [1, 2],
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    },
    {
      ...head,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { content: '<calc>2+2' }, logprobs: null, finish_reason: null, token_ids: [5] }],
    },
    {
      ...head,
      object: 'chat.completion.chunk',
      choices: [
        {
          index: 0,
          delta: { content: '' },
          logprobs: null,
          finish_reason: 'stop',
          stop_reason: stopReason,
          token_ids: [6],
        },
      ],
    },
  ];
}

type Assembled = { choices: Record<string, unknown>[] };

describe('streamed responses, as the gateway records them', () => {
  it('keep the stop_reason of the last chunk, string or token id', () => {
    for (const stopReason of ['</calc>', 128001]) {
      const assembler = new StreamAssembler('chat.completions');
      for (const c of chatChunks(stopReason)) assembler.add(c);
      const [choice] = (assembler.response() as Assembled).choices;
      assert.equal(choice!.finish_reason, 'stop');
      assert.equal(choice!.stop_reason, stopReason);
      assert.deepEqual(choice!.message, { role: 'assistant', content: '<calc>2+2' });
      assert.deepEqual(choice!.token_ids, [5, 6]);
    }
  });

  it('have a null stop_reason when the engine sent none (EOS, length, an engine without it)', () => {
    const assembler = new StreamAssembler('chat.completions');
    for (const c of chatChunks(null)) assembler.add(c);
    assert.equal((assembler.response() as Assembled).choices[0]!.stop_reason, null);
    const legacy = new StreamAssembler('completions');
    legacy.add({
      ...head,
      object: 'text_completion',
      choices: [{ index: 0, text: 'Paris', logprobs: null, finish_reason: 'stop', stop_reason: '.' }],
    });
    assert.equal((legacy.response() as Assembled).choices[0]!.stop_reason, '.');
  });
});
