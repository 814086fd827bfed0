import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

/**
 * A FAKE OpenAI-compatible optimiser LLM for APO tests (a real optimiser model cannot run here): a real HTTP server
 * on 127.0.0.1 that validates every /v1/chat/completions request with zod (400 in the OpenAI error shape when
 * invalid), records it, and answers with the next entry of a script the test wrote. Never a stand-in for the
 * policy model: that is the real SmolLM2 server.
 */
const messageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z.string().min(1, 'message content must not be empty'),
});

const chatRequestSchema = z.object({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
  stream: z.literal(false).optional(),
});
export type OptimizerRequest = z.infer<typeof chatRequestSchema>;

/** One scripted answer: the assistant's text, or an HTTP status to fail that call with. */
export type ScriptedAnswer = string | { status: number; message?: string };

export interface ScriptedOptimizer {
  /** Base URL for an OpenAI client, ending in /v1. */
  baseUrl: string;
  /** Every valid request, in arrival order (invalid ones are answered 400 and kept in `rejected`). */
  requests: OptimizerRequest[];
  rejected: { status: number; message: string }[];
  /** Authorization header of each valid request. */
  authHeaders: (string | undefined)[];
  /** Add answers to the end of the queue. */
  enqueue(...answers: ScriptedAnswer[]): void;
  /** Answers not used yet. */
  remaining(): number;
  close(): Promise<void>;
}

export interface ScriptedOptimizerOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401. */
  apiKey?: string;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  param: string | null = null,
): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ error: { message, type, param, code: null } }));
}

/** Start the FAKE optimiser on a free loopback port; each valid request consumes the next scripted answer. */
export async function startScriptedOptimizer(
  script: ScriptedAnswer[],
  opts: ScriptedOptimizerOptions = {},
): Promise<ScriptedOptimizer> {
  const queue = [...script];
  const requests: OptimizerRequest[] = [];
  const rejected: { status: number; message: string }[] = [];
  const authHeaders: (string | undefined)[] = [];
  const reject = (res: ServerResponse, status: number, message: string, type: string, param: string | null = null) => {
    rejected.push({ status, message });
    sendError(res, status, message, type, param);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
      return reject(res, 404, `no route ${req.method} ${req.url}`, 'not_found_error');
    if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return reject(res, 401, 'missing or wrong API key', 'authentication_error');
    }
    let json: unknown;
    try {
      json = JSON.parse(await readBody(req));
    } catch {
      return reject(res, 400, 'body is not JSON', 'invalid_request_error');
    }
    const parsed = chatRequestSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const param = issue?.path.join('.') ?? null;
      return reject(
        res,
        400,
        `${param ?? '(root)'}: ${issue?.message ?? 'invalid request'}`,
        'invalid_request_error',
        param,
      );
    }
    requests.push(parsed.data);
    authHeaders.push(req.headers.authorization);
    const answer = queue.shift();
    if (answer === undefined)
      return sendError(res, 500, `scripted optimizer: no answer left for request ${requests.length}`, 'server_error');
    if (typeof answer !== 'string')
      return sendError(res, answer.status, answer.message ?? 'scripted failure', 'server_error');
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `chatcmpl-optimizer-${requests.length}`,
        object: 'chat.completion',
        created: 0,
        model: parsed.data.model,
        choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop', logprobs: null }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) =>
      sendError(res, 500, `scripted optimizer crashed: ${String(err)}`, 'server_error'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | null = null;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    rejected,
    authHeaders,
    enqueue: (...answers) => void queue.push(...answers),
    remaining: () => queue.length,
    // Idempotent, so a test may close it early (endpoint down) and still leave it to its after hook.
    close: () =>
      (closed ??= new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      })),
  };
}
