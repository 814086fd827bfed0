import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/**
 * FAKE model server: a SCRIPTED OpenAI-compatible chat server for agent tests: it answers each /v1/chat/completions call with the
 * next canned reply (cut at the request's stop strings, as a real server does), records every request, and
 * rejects malformed ones with OpenAI-style 400 bodies so an agent sending garbage fails the test.
 */
const chatRequestSchema = z.object({
  model: z.string().min(1),
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() })).min(1),
  max_tokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  stop: z.union([z.string(), z.array(z.string())]).optional(),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;

export interface ScriptedServer {
  baseUrl: string;
  requests: ChatRequest[];
  authHeaders: (string | undefined)[];
  close(): Promise<void>;
}

/** A reply is canned text, or an HTTP status to fail that call with. */
export type ScriptedReply = string | { status: number };

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function cutAtStop(text: string, stop: ChatRequest['stop']): { text: string; finish: 'stop' | 'length' } {
  const stops = stop === undefined ? [] : Array.isArray(stop) ? stop : [stop];
  const cuts = stops.map((s) => text.indexOf(s)).filter((i) => i >= 0);
  return cuts.length > 0 ? { text: text.slice(0, Math.min(...cuts)), finish: 'stop' } : { text, finish: 'length' };
}

/** Starts the server on a free loopback port; `replies` are used in order, the last one repeats. */
export async function startScriptedServer(replies: ScriptedReply[]): Promise<ScriptedServer> {
  const requests: ChatRequest[] = [];
  const authHeaders: (string | undefined)[] = [];
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const error = (status: number, message: string, param: string | null = null) =>
      send(status, { error: { message, type: 'invalid_request_error', param, code: null } });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
      return error(404, `no route ${req.method} ${req.url}`);
    readBody(req).then(
      (raw) => {
        let json: unknown;
        try {
          json = JSON.parse(raw);
        } catch {
          return error(400, 'body is not JSON');
        }
        const parsed = chatRequestSchema.safeParse(json);
        if (!parsed.success) return error(400, parsed.error.message, parsed.error.issues[0]?.path.join('.') ?? null);
        requests.push(parsed.data);
        authHeaders.push(req.headers.authorization);
        const reply = replies[Math.min(requests.length - 1, replies.length - 1)] ?? '';
        if (typeof reply !== 'string')
          return send(reply.status, {
            error: { message: 'scripted failure', type: 'server_error', param: null, code: null },
          });
        const { text, finish } = cutAtStop(reply, parsed.data.stop);
        send(200, {
          id: `chatcmpl-scripted-${requests.length}`,
          object: 'chat.completion',
          created: 0,
          model: parsed.data.model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish, logprobs: null }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        });
      },
      (err: unknown) => error(400, String(err)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    authHeaders,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}
