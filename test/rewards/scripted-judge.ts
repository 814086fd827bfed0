import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface JudgeRequest {
  authorization: string | undefined;
  body: { model: string; messages: { role: string; content: string }[] };
}
/** What the judge does next: answer with content, or fail with an HTTP status. */
export type JudgeStep = { content: string } | { status: number };

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A scripted OpenAI-compatible judge on 127.0.0.1: answers POST /v1/chat/completions from a queue of steps.
 * It validates what it receives (path, JSON body, model, system + user messages) and answers 400 otherwise.
 */
export async function startScriptedJudge(): Promise<{
  baseUrl: string;
  steps: JudgeStep[];
  received: JudgeRequest[];
  close(): Promise<void>;
}> {
  const steps: JudgeStep[] = [];
  const received: JudgeRequest[] = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then((text) => {
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let body: JudgeRequest['body'];
      try {
        body = JSON.parse(text) as JudgeRequest['body'];
      } catch {
        return reply(400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
      }
      const valid =
        req.method === 'POST' &&
        req.url === '/v1/chat/completions' &&
        typeof body.model === 'string' &&
        Array.isArray(body.messages) &&
        body.messages.map((m) => m.role).join() === 'system,user' &&
        body.messages.every((m) => typeof m.content === 'string');
      if (!valid)
        return reply(400, {
          error: { message: `unexpected request ${req.method} ${req.url}`, type: 'invalid_request_error' },
        });
      received.push({ authorization: req.headers.authorization, body });
      const step = steps.shift();
      if (!step) return reply(500, { error: { message: 'scripted judge has no step left', type: 'server_error' } });
      if ('status' in step) return reply(step.status, { error: { message: 'scripted failure', type: 'server_error' } });
      reply(200, {
        id: 'j1',
        object: 'chat.completion',
        created: 0,
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: step.content }, finish_reason: 'stop' }],
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    steps,
    received,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
