import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GatewayDeps } from '../../src/gateway/app.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import type { TestServices } from '../helpers/services.js';
import { startGateway, startStore, type RunningGateway } from './harness.js';

// FAKE model server (an upstream scripted to fail on demand, which the real one cannot be made to do): answers in the
// OpenAI chat-completions shape with the vLLM extension fields, one scripted step per request.
/** One scripted answer of the scripted upstream, consumed in order; when the script runs out, `ok` is used. */
export type Step =
  | { kind: 'status'; status: number; headers?: Record<string, string>; message?: string }
  | { kind: 'json'; delayMs?: number }
  | { kind: 'sse'; cutAfter?: number; delayMs?: number; chunkDelayMs?: number; pythonJson?: boolean }
  | { kind: 'hang' };

export interface Received {
  body: Record<string, unknown>;
  aborted: boolean;
}

export const PROMPT_IDS = [1, 9690, 2];
export const COMPLETION = [
  { id: 504, text: 'Hello' },
  { id: 28, text: ',' },
  { id: 905, text: ' world' },
];

/**
 * The scripted upstream: a real HTTP server on loopback that plays a fixed script of answers (429s, 500s, cut
 * streams, slow first bytes, hangs). It checks that what the gateway sends it carries the extension fields.
 */
export async function startScriptedUpstream() {
  const script: Step[] = [];
  const received: Received[] = [];
  const errors: string[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        errors.push(`non-JSON body: ${raw.slice(0, 80)}`);
        res.writeHead(400).end();
        return;
      }
      if (body.return_token_ids !== true) errors.push('return_token_ids missing');
      if (typeof body.model !== 'string') errors.push('model missing');
      const entry: Received = { body, aborted: false };
      received.push(entry);
      res.on('close', () => {
        if (!res.writableFinished) entry.aborted = true;
      });
      play(script.shift() ?? { kind: body.stream ? 'sse' : 'json' }, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    script,
    received,
    errors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function play(step: Step, body: Record<string, unknown>, res: http.ServerResponse): void {
  const model = String(body.model);
  if (step.kind === 'hang') return;
  if (step.kind === 'status') {
    res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
    res.end(
      JSON.stringify({
        error: { message: step.message ?? `scripted ${step.status}`, type: 'server_error', param: null, code: null },
      }),
    );
    return;
  }
  if (step.kind === 'json') {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(fullResponse(model)));
    }, step.delayMs ?? 0);
    return;
  }
  const chunks = streamChunks(model);
  const cutAfter = step.cutAfter ?? Infinity;
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const next = () => {
      if (i >= cutAfter) return res.destroy();
      if (i >= chunks.length) return res.end('data: [DONE]\n\n');
      res.write(`data: ${chunkText(chunks[i++], step.pythonJson)}\n\n`);
      setTimeout(next, step.chunkDelayMs ?? 0);
    };
    next();
  }, step.delayMs ?? 0);
}

const logprob = (i: number) => -0.25 * (i + 1);

/** A chunk as JSON text; `python`: with json.dumps' default separators (", " and ": "), as a Python server may send. */
export function chunkText(chunk: unknown, python = false): string {
  if (!python) return JSON.stringify(chunk);
  if (Array.isArray(chunk)) return `[${chunk.map((x) => chunkText(x, true)).join(', ')}]`;
  if (chunk && typeof chunk === 'object')
    return `{${Object.entries(chunk)
      .map(([k, v]) => `${JSON.stringify(k)}: ${chunkText(v, true)}`)
      .join(', ')}}`;
  return JSON.stringify(chunk);
}

export function fullResponse(model: string) {
  return {
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    system_fingerprint: `${model}@v7`,
    prompt_token_ids: PROMPT_IDS,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: COMPLETION.map((t) => t.text).join('') },
        logprobs: { content: COMPLETION.map((t, i) => ({ token: t.text, logprob: logprob(i), top_logprobs: [] })) },
        finish_reason: 'stop',
        token_ids: COMPLETION.map((t) => t.id),
      },
    ],
    usage: {
      prompt_tokens: PROMPT_IDS.length,
      completion_tokens: COMPLETION.length,
      total_tokens: PROMPT_IDS.length + COMPLETION.length,
    },
  };
}

export function streamChunks(model: string) {
  const head = {
    id: 'chatcmpl-scripted',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model,
    system_fingerprint: `${model}@v7`,
  };
  return [
    {
      ...head,
      prompt_token_ids: PROMPT_IDS,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    },
    ...COMPLETION.map((t, i) => ({
      ...head,
      choices: [
        {
          index: 0,
          delta: { content: t.text },
          logprobs: { content: [{ token: t.text, logprob: logprob(i), top_logprobs: [] }] },
          finish_reason: i === COMPLETION.length - 1 ? 'stop' : null,
          token_ids: [t.id],
        },
      ],
    })),
    {
      ...head,
      choices: [],
      usage: {
        prompt_tokens: PROMPT_IDS.length,
        completion_tokens: COMPLETION.length,
        total_tokens: PROMPT_IDS.length + COMPLETION.length,
      },
    },
  ];
}

export type ScriptedUpstream = Awaited<ReturnType<typeof startScriptedUpstream>>;

/** A real S3 server and gateway in front of the FAKE scripted upstream: the set-up the gateway tests share. */
export async function startScriptedGateway(
  extra: Partial<GatewayDeps> = {},
): Promise<{ services: TestServices; store: ObjectStore; upstream: ScriptedUpstream; gw: RunningGateway }> {
  const { services, store } = await startStore();
  let upstream: ScriptedUpstream | undefined;
  try {
    upstream = await startScriptedUpstream();
    return { services, store, upstream, gw: await startGateway(store, services.dataDir, upstream.url, extra) };
  } catch (err) {
    await stopScriptedGateway({ services, upstream });
    throw err;
  }
}

/** Stops what startScriptedGateway started (whatever of it did start). */
export async function stopScriptedGateway(parts: {
  services?: TestServices;
  upstream?: ScriptedUpstream;
  gw?: RunningGateway;
}): Promise<void> {
  await parts.gw?.close();
  await parts.upstream?.close();
  await parts.services?.stop();
}
