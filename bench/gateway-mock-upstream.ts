import http from 'node:http';

const PROMPT_IDS = Array.from({ length: 24 }, (_, i) => 100 + i);
const TOKENS = ['The', ' answer', ' is', ' 42', '.'];

const response = (model: string) => JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model,
  system_fingerprint: `${model}@bench`,
  prompt_token_ids: PROMPT_IDS,
  choices: [{
    index: 0,
    message: { role: 'assistant', content: TOKENS.join('') },
    logprobs: { content: TOKENS.map((t) => ({ token: t, logprob: -0.1, top_logprobs: [] })) },
    finish_reason: 'stop',
    token_ids: TOKENS.map((_, i) => 500 + i),
  }],
  usage: { prompt_tokens: PROMPT_IDS.length, completion_tokens: TOKENS.length, total_tokens: PROMPT_IDS.length + TOKENS.length },
});

const sse = (model: string) => {
  const head = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model, system_fingerprint: `${model}@bench` };
  const chunks = TOKENS.map((t, i) => ({
    ...head,
    ...(i === 0 ? { prompt_token_ids: PROMPT_IDS } : {}),
    choices: [{ index: 0, delta: { content: t }, logprobs: { content: [{ token: t, logprob: -0.1, top_logprobs: [] }] }, finish_reason: i === TOKENS.length - 1 ? 'stop' : null, token_ids: [500 + i] }],
  }));
  return chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`);
};

/** The bench's mock model server: a fixed small chat completion (JSON at once, or 5 SSE chunks: one at once, four 2 ms later). */
export function startMockUpstream(port: number): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      let body: { model?: string; stream?: boolean } = {};
      try {
        body = JSON.parse(Buffer.concat(parts).toString()) as typeof body;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json","type":"invalid_request_error","param":null,"code":null}}');
        return;
      }
      const model = body.model ?? 'mock';
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(response(model));
        return;
      }
      // Like an engine, the first token goes out at once and the rest follow a little later (not in the same packet),
      // so time to first byte measures the first token, not the whole answer.
      const [first, ...rest] = sse(model);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(first);
      setTimeout(() => {
        for (const c of rest) res.write(c);
        res.end('data: [DONE]\n\n');
      }, 2);
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}
