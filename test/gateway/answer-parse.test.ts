import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAnswer, type Cut } from '../../src/gateway/upstream/answer-parse.js';
import { stripExtensions, type Asked } from '../../src/gateway/upstream/extensions.js';
import { engineAnswer } from './engine-spans.js';

const ASKED: Asked[] = [
  { tokenIds: false, logprobs: false, usage: false },
  { tokenIds: true, logprobs: false, usage: false },
  { tokenIds: false, logprobs: true, usage: false },
];
const cutFor = (a: Asked): Cut => ({ ids: !a.tokenIds, logprobs: !a.logprobs });

/** JSON.parse's verdict: the stripped answer, or undefined when the text is not JSON. */
function reference(text: string, asked: Asked): unknown {
  try {
    return stripExtensions(JSON.parse(text), asked);
  } catch {
    return undefined;
  }
}

function fast(text: string, asked: Asked): unknown {
  const parsed = parseAnswer(text, cutFor(asked));
  return parsed === undefined ? undefined : stripExtensions(parsed, asked);
}

/** vLLM's chat answer with return_token_ids and logprobs (tokens with quotes, backslashes, control characters, emoji). */
function vllm(n = 1): Record<string, unknown> {
  const answer = engineAnswer([1, 0, 20, 3000, 151_643], [7, 8, 9, 10], [-0.5, -1.25e-7, 0, -3]);
  const choice = (answer.choices as Record<string, unknown>[])[0]!;
  const tokens = ['say "hi"', 'back\\slash', 'tab\tline\n', '\u{1F600}é'];
  choice.logprobs = {
    content: tokens.map((token, k) => ({
      token,
      logprob: [-0.5, -1.25e-7, 0, -3][k],
      bytes: [...Buffer.from(token)],
      top_logprobs: [{ token: 'x', logprob: -9.5, bytes: null }],
    })),
  };
  answer.choices = Array.from({ length: n }, (_, i) => ({ ...choice, index: i }));
  return answer;
}

/**
 * The trainer's model server answer as FastAPI's JSONResponse renders it (compact separators, raw UTF-8, Python floats
 * such as -0.0 and -1e-05): bytes taken from `JSONResponse(body).body` in the project's venv.
 */
const FASTAPI =
  '{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":{"content":[{"token":" a","logprob":-0.0,"bytes":[32,97],"top_logprobs":[{"token":"x","logprob":-1e-05,"bytes":[120]}]},{"token":"é\\"\\\\","logprob":-12.5,"bytes":[195,169,34,92],"top_logprobs":[{"token":"x","logprob":-1e-05,"bytes":[120]}]},{"token":"\\n","logprob":-3.25e-07,"bytes":[10],"top_logprobs":[{"token":"x","logprob":-1e-05,"bytes":[120]}]}]},"finish_reason":"stop","token_ids":[1,2,3]}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5},"prompt_token_ids":[0,5]}';

const CORPUS: [string, string][] = [
  ['FastAPI JSONResponse (the trainer model server)', FASTAPI],
  ['vLLM chat, one choice', JSON.stringify(vllm())],
  ['vLLM chat, two choices', JSON.stringify(vllm(2))],
  [
    'OpenAI-shaped logprobs with refusal',
    JSON.stringify({
      ...vllm(),
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'ok' },
          logprobs: { content: [{ token: 'ok', logprob: -0.1, bytes: [111, 107], top_logprobs: [] }], refusal: null },
          finish_reason: 'stop',
          token_ids: [5],
        },
      ],
    }),
  ],
  ['engine answer (test helper)', JSON.stringify(engineAnswer([5, 6, 7], [1, 2], [-0.25, -2]))],
  [
    'ids inside the choice',
    JSON.stringify({
      choices: [{ index: 0, text: 'x', prompt_token_ids: [1, 2], token_ids: [3], logprobs: null }],
      usage: { completion_tokens: 1 },
    }),
  ],
  [
    'legacy completions logprobs (not the chat grammar)',
    JSON.stringify({
      choices: [
        {
          index: 0,
          text: 'ab',
          logprobs: { tokens: ['a', 'b'], token_logprobs: [-1, -2], top_logprobs: null, text_offset: [0, 1] },
          token_ids: [1, 2],
        },
      ],
      prompt_token_ids: [9],
    }),
  ],
  [
    'key text inside a string',
    JSON.stringify({
      choices: [
        {
          index: 0,
          message: { content: ',"token_ids":[1],"logprobs":{"content":[]}' },
          logprobs: null,
          token_ids: [4],
        },
      ],
      prompt_token_ids: [1],
    }),
  ],
  [
    'a nested logprobs key elsewhere',
    JSON.stringify({
      kv_transfer_params: { logprobs: { content: [] }, token_ids: [1] },
      choices: [{ index: 0, message: { content: 'x' }, logprobs: { content: [] }, token_ids: [1] }],
      prompt_token_ids: [2],
    }),
  ],
  [
    'duplicate keys (JSON.parse keeps the last)',
    '{"prompt_token_ids":[1,2],"choices":[{"index":0,"token_ids":[3],"token_ids":"two"}],"prompt_token_ids":[4]}',
  ],
  ['leading zero id (invalid JSON)', '{"prompt_token_ids":[01,2],"choices":[]}'],
  [
    'NaN logprob (invalid JSON)',
    '{"choices":[{"index":0,"logprobs":{"content":[{"token":"a","logprob":NaN,"bytes":[97],"top_logprobs":[]}]}}]}',
  ],
  [
    '-Infinity logprob (invalid JSON)',
    '{"choices":[{"index":0,"logprobs":{"content":[{"token":"a","logprob":-Infinity,"bytes":[97],"top_logprobs":[]}]}}]}',
  ],
  ['trailing comma in ids (invalid JSON)', '{"prompt_token_ids":[1,2,],"choices":[]}'],
  [
    'unescaped control character in a token (invalid JSON)',
    `{"choices":[{"index":0,"logprobs":{"content":[{"token":"a\u0001","logprob":-1,"bytes":[97,1],"top_logprobs":[]}]}}]}`,
  ],
  [
    'spaces after separators (not the compact grammar)',
    JSON.stringify(vllm()).replaceAll('":', '": ').replaceAll(',"', ', "'),
  ],
  ['pretty-printed', JSON.stringify(vllm(), null, 2)],
  ['an array, not an answer', '[{"prompt_token_ids":[1]}]'],
  ['cut short', JSON.stringify(vllm()).slice(0, -3)],
];

void describe('parseAnswer: the engine answer parsed without materialising what the agent will not get', () => {
  void it('gives what JSON.parse gives once stripped, and rejects exactly the texts JSON.parse rejects', () => {
    for (const [name, text] of CORPUS) {
      for (const asked of ASKED)
        assert.deepStrictEqual(fast(text, asked), reference(text, asked), `${name}, asked ${JSON.stringify(asked)}`);
      assert.deepStrictEqual(
        parseAnswer(text, { ids: false, logprobs: false }),
        reference(text, { tokenIds: true, logprobs: true, usage: true }),
        `${name}, nothing cut`,
      );
    }
  });

  void it('leaves the cut values unparsed on compact engine answers (the fast path is taken), usage and message intact', () => {
    const text = JSON.stringify(vllm(2));
    const parsed = parseAnswer(text, { ids: true, logprobs: true }) as {
      prompt_token_ids: unknown;
      choices: { token_ids: unknown; logprobs: unknown; message: unknown }[];
      usage: unknown;
    };
    const whole = JSON.parse(text) as typeof parsed;
    assert.equal(typeof parsed.prompt_token_ids, 'string');
    for (const c of parsed.choices) {
      assert.equal(typeof c.token_ids, 'string');
      assert.equal(typeof c.logprobs, 'string');
    }
    assert.deepEqual(parsed.usage, whole.usage);
    assert.deepEqual(
      parsed.choices.map((c) => c.message),
      whole.choices.map((c) => c.message),
    );
    const idsOnly = parseAnswer(text, { ids: true, logprobs: false }) as typeof parsed;
    assert.deepEqual(
      idsOnly.choices[1]!.logprobs,
      whole.choices[1]!.logprobs,
      'logprobs the agent asked for are parsed',
    );
    const served = parseAnswer(FASTAPI, { ids: true, logprobs: true }) as typeof parsed;
    assert.deepEqual(
      [typeof served.prompt_token_ids, typeof served.choices[0]!.token_ids, typeof served.choices[0]!.logprobs],
      ['string', 'string', 'string'],
      "the trainer model server's answers take the fast path",
    );
    const nested = CORPUS.find(([n]) => n === 'a nested logprobs key elsewhere')![1];
    assert.deepEqual(
      (parseAnswer(nested, { ids: true, logprobs: true }) as typeof parsed).prompt_token_ids,
      [2],
      'a marker in the wrong place sends the text to JSON.parse',
    );
  });

  void it('agrees with JSON.parse on 3,000 corrupted answers (characters deleted, inserted, replaced)', () => {
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    const texts = [JSON.stringify(vllm()), JSON.stringify(vllm(2)), CORPUS[2]![1]];
    const alphabet = ['', ',', ']', '[', '}', '{', '"', '\\', '0', '-', '.', 'e', ':', ' ', 'x', '\u0001', 'null'];
    let invalid = 0;
    for (let i = 0; i < 3000; i++) {
      const text = texts[i % texts.length]!;
      const at = rand(text.length);
      const edit = alphabet[rand(alphabet.length)]!;
      const cut = rand(3);
      const mutated = text.slice(0, at) + edit + text.slice(at + cut);
      const asked = ASKED[i % ASKED.length]!;
      const want = reference(mutated, asked);
      if (want === undefined) invalid++;
      assert.deepStrictEqual(
        fast(mutated, asked),
        want,
        `mutation ${i}: ${JSON.stringify(mutated.slice(Math.max(0, at - 20), at + 20))}`,
      );
    }
    assert.ok(invalid > 1000 && invalid < 2900, `a mix of valid and invalid texts (${invalid} invalid)`);
  });
});
