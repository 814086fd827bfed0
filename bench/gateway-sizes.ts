/**
 * Call sizes for the gateway bench. tiny: one short message, 24 prompt ids, 5 completion tokens. agent: a 5.9 kB
 * request (system prompt + a few turns of history), 2,000 prompt ids, 256 completion tokens with logprobs, like one
 * step of a coding agent. long: a long multi-turn call (~24 kB of history, 8,000 prompt ids, 256 completion tokens).
 */
export type CallSize = 'tiny' | 'agent' | 'long';
export const CALL_SIZES: readonly CallSize[] = ['tiny', 'agent', 'long'];

const SHAPES: Record<CallSize, { requestBytes: number; promptIds: number; completion: number }> = {
  tiny: { requestBytes: 0, promptIds: 24, completion: 5 },
  agent: { requestBytes: 6_000, promptIds: 2_000, completion: 256 },
  long: { requestBytes: 24_000, promptIds: 8_000, completion: 256 },
};

const WORDS = [
  'the',
  ' file',
  ' returns',
  ' a',
  ' list',
  ' of',
  ' tests',
  ' that',
  ' fail',
  ' when',
  ' run',
  ' with',
  '\n',
  '  ',
  'def',
  '(',
  ')',
  ':',
];

/** The agent's request body: tiny is the original bench's one message; others grow history to the shape's size. */
export function requestBody(size: CallSize, stream: boolean): string {
  const { requestBytes } = SHAPES[size];
  if (requestBytes === 0)
    return JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'What is the answer?' }],
      stream,
    });
  const system = 'You are a careful coding agent. Use the tools to read files, run tests and edit code. '.repeat(24);
  const messages: { role: string; content: string }[] = [{ role: 'system', content: system }];
  for (let turn = 0; JSON.stringify(messages).length < requestBytes - 400; turn++) {
    const words = Array.from({ length: 60 }, (_, i) => WORDS[(turn * 7 + i) % WORDS.length]).join('');
    messages.push({ role: turn % 2 ? 'assistant' : 'user', content: `turn ${turn}: ${words}` });
  }
  return JSON.stringify({ model: 'gpt-4o-mini', messages, temperature: 0.7, max_tokens: 512, stream });
}

/** The engine's answer: token ids, logprob entries (token, logprob, bytes, top_logprobs) as vLLM sends them. */
export function engineTokens(size: CallSize) {
  const { promptIds, completion } = SHAPES[size];
  const prompt = Array.from({ length: promptIds }, (_, i) => (i * 7_919 + 13) % 49_152);
  const tokens = Array.from({ length: completion }, (_, i) =>
    size === 'tiny' ? ['The', ' answer', ' is', ' 42', '.'][i]! : WORDS[i % WORDS.length]!,
  );
  const ids = tokens.map((_, i) => (size === 'tiny' ? 500 + i : (i * 104_729 + 7) % 49_152));
  const logprobs = tokens.map((_, i) => (size === 'tiny' ? -0.1 : -((i * 7_919) % 10_007) / 3_001));
  const entries = tokens.map((token, i) =>
    size === 'tiny'
      ? { token, logprob: logprobs[i]!, top_logprobs: [] }
      : { token, logprob: logprobs[i]!, bytes: [...Buffer.from(token)], top_logprobs: [] },
  );
  return { prompt, tokens, ids, entries };
}
