import http from 'node:http';
import { engineTokens, type CallSize } from './gateway-sizes.js';

function answers(size: CallSize, model: string) {
  const { prompt, tokens, ids, entries } = engineTokens(size);
  const head = { id: 'chatcmpl-bench', created: 1_700_000_000, model, system_fingerprint: `${model}@bench` };
  const json = JSON.stringify({
    ...head,
    object: 'chat.completion',
    prompt_token_ids: prompt,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: tokens.join('') },
        logprobs: { content: entries },
        finish_reason: 'stop',
        token_ids: ids,
      },
    ],
    usage: {
      prompt_tokens: prompt.length,
      completion_tokens: tokens.length,
      total_tokens: prompt.length + tokens.length,
    },
  });
  const chunks = tokens.map(
    (t, i) =>
      `data: ${JSON.stringify({
        ...head,
        object: 'chat.completion.chunk',
        ...(i === 0 ? { prompt_token_ids: prompt } : {}),
        choices: [
          {
            index: 0,
            delta: { content: t },
            logprobs: { content: [entries[i]] },
            finish_reason: i === tokens.length - 1 ? 'stop' : null,
            token_ids: [ids[i]],
          },
        ],
      })}\n\n`,
  );
  return { json, chunks };
}

/**
 * The bench's mock model server: a fixed chat completion of the given size (JSON at once, or one SSE chunk per token:
 * the first at once, the rest 2 ms later). Answers are built once, so the mock costs little per call.
 */
export function startMockUpstream(port: number, size: CallSize = 'tiny'): Promise<http.Server> {
  const cache = new Map<string, ReturnType<typeof answers>>();
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      let body: { model?: string; stream?: boolean } = {};
      try {
        body = JSON.parse(Buffer.concat(parts).toString()) as typeof body;
      } catch {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end('{"error":{"message":"bad json","type":"invalid_request_error","param":null,"code":null}}');
        return;
      }
      const model = body.model ?? 'mock';
      if (!cache.has(model)) cache.set(model, answers(size, model));
      const { json, chunks } = cache.get(model)!;
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(json);
        return;
      }
      // Like an engine, the first token goes out at once and the rest follow a little later (not in the same packet),
      // so time to first byte measures the first token, not the whole answer.
      const [first, ...rest] = chunks;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(first);
      setTimeout(() => {
        res.write(rest.join(''));
        res.end('data: [DONE]\n\n');
      }, 2);
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}
