/* eslint-disable @typescript-eslint/no-explicit-any -- engine JSON */
import { once } from 'node:events';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { Span } from '../../contracts/span.js';
import { countCompletion } from '../registry/budget.js';
import type { Cancellation } from './client-link.js';
import { stripExtensions, isUsageOnlyChunk, type Asked } from '../upstream/extensions.js';
import { GatewayError, errorBody, typeForStatus } from './openai-error.js';
import type { CallContext } from '../recording/call-context.js';
import type { CallRecorder } from '../recording/call-recorder.js';
import type { GatewayMetrics } from '../metrics.js';
import type { RolloutRegistry } from '../registry/rollout-registry.js';
import { oneLine } from '../recording/record-line.js';
import { parseAnswer, tryParse } from '../upstream/answer-parse.js';
import { sseBatches } from '../upstream/sse.js';
import { clampToContext } from '../upstream/context-clamp.js';
import { assembledAnswer, retokenize, type Retokenized, type TeacherUpstreams } from '../upstream/teacher.js';
import {
  header,
  ResponseTooLargeError,
  type BufferedResponse,
  type UpstreamHeaders,
  type Upstream,
  type UpstreamResponse,
} from '../upstream/model-client.js';

/**
 * Where a call goes: to the model server, then its record to the recorder (the WAL, then the object store). A failure
 * on the model side is counted in the metrics and made durable in the rollout's registry record.
 */
export interface RelayDeps {
  upstream: Upstream;
  /** The teachers' endpoints (run config `teacher`), for rollouts a teacher serves. */
  teachers: TeacherUpstreams;
  recorder: CallRecorder;
  metrics: GatewayMetrics;
  registry: RolloutRegistry;
  log: FastifyBaseLogger;
}

const UPSTREAM_PATH: Record<Span['endpoint'], string> = {
  'chat.completions': '/v1/chat/completions',
  completions: '/v1/completions',
};

/** The model server, or the rollout's teacher. */
const upstreamOf = (relay: RelayDeps, ctx: CallContext): Upstream => ctx.teacher?.upstream ?? relay.upstream;

/**
 * A teacher's answer in the policy's tokens, for the span; null when the call is the model server's. When the model
 * server cannot tokenize it the attempt is an infra failure (the agent still gets its answer; the span has no ids).
 */
async function teacherTokens(
  relay: RelayDeps,
  ctx: CallContext,
  answer: () => unknown,
  link: Cancellation,
): Promise<Retokenized | null> {
  if (!ctx.teacher) return null;
  try {
    return await retokenize(relay.upstream, ctx.model, ctx.endpoint, ctx.upstreamRequest, answer(), link);
  } catch (err) {
    relay.log.warn({ err }, 'a teacher answer could not be tokenized for the policy');
    ctx.translation.push(`teacher answer not tokenized for the policy: ${(err as Error).message}`);
    await upstreamFailed(relay, ctx, 'retokenize', null);
    return null;
  }
}

/** A non-streaming call: the span is durable before the response is sent. */
export async function relayJson(
  relay: RelayDeps,
  ctx: CallContext,
  asked: Asked,
  reply: FastifyReply,
  link: Cancellation,
): Promise<unknown> {
  let res: BufferedResponse;
  const upstream = upstreamOf(relay, ctx);
  try {
    res = await upstream.postBuffered(UPSTREAM_PATH[ctx.endpoint], ctx.upstreamText, link);
    if (!ctx.teacher && clampToContext(ctx, res.statusCode, res.text))
      res = await upstream.postBuffered(UPSTREAM_PATH[ctx.endpoint], ctx.upstreamText, link);
  } catch (err) {
    return failBeforeFirstByte(relay, ctx, err, link);
  }
  const firstByteAt = res.headersAt;
  // Nothing to strip when the agent asked for the ids and logprobs: the answer goes out as received.
  const passThrough = !ctx.dialect && asked.tokenIds && asked.logprobs;
  // What the agent gets no copy of is checked, not parsed (upstream/answer-parse.ts); a dialect parses it whole.
  const json = ctx.dialect
    ? tryParse(res.text)
    : parseAnswer(
        res.text,
        passThrough ? { ids: true, logprobs: true } : { ids: !asked.tokenIds, logprobs: !asked.logprobs },
      );
  if (res.statusCode >= 400 || json === undefined) {
    const message = upstreamMessage(json, res.text, res.statusCode);
    await upstreamFailed(relay, ctx, `status_${res.statusCode}`, res.statusCode);
    await relay.recorder.record(ctx, {
      answer: { json: answerText(res.bytes, json) },
      firstByteAt,
      error: { status: res.statusCode, message },
      usage: (json as any)?.usage,
    });
    throw agentError(res, message);
  }
  const retokenized = await teacherTokens(relay, ctx, () => json, link);
  // The answer goes into the WAL as the text received; the span is built from it when it is uploaded.
  await relay.recorder.record(ctx, {
    answer: { json: answerText(res.bytes, json) },
    firstByteAt,
    error: null,
    usage: (json as any)?.usage,
    retokenized,
  });
  countCompletion(ctx.rollout, json);
  if (ctx.dialect) return reply.code(200).send(ctx.dialect.json(json as ChatCompletion));
  if (passThrough) return reply.code(200).type('application/json; charset=utf-8').send(res.text);
  return reply.code(200).send(stripExtensions(json, asked));
}

/** A streaming call: chunks pass through as they arrive; the span is durable before `[DONE]` is written. */
export async function relayStream(
  relay: RelayDeps,
  ctx: CallContext,
  asked: Asked,
  reply: FastifyReply,
  request: FastifyRequest,
  link: Cancellation,
) {
  let res: UpstreamResponse;
  // A 400's text, read to see whether the engine refused the completion length (then asked again, clamped).
  let refusal: string | undefined;
  const upstream = upstreamOf(relay, ctx);
  try {
    res = await upstream.post(UPSTREAM_PATH[ctx.endpoint], ctx.upstreamText, link);
    if (res.statusCode === 400) {
      refusal = await res.body.text().catch((e: Error) => e.message);
      if (!ctx.teacher && clampToContext(ctx, res.statusCode, refusal)) {
        refusal = undefined;
        res = await upstream.post(UPSTREAM_PATH[ctx.endpoint], ctx.upstreamText, link);
      }
    }
  } catch (err) {
    return failBeforeFirstByte(relay, ctx, err, link);
  }
  const contentType = header(res.headers, 'content-type') ?? '';
  if (res.statusCode >= 400 || !contentType.includes('text/event-stream')) {
    const text = refusal ?? (await res.body.text().catch((e: Error) => e.message));
    const json = tryParse(text);
    const message =
      res.statusCode >= 400
        ? upstreamMessage(json, text, res.statusCode)
        : `upstream answered ${contentType || 'no content-type'} to a stream request`;
    await upstreamFailed(relay, ctx, `status_${res.statusCode}`, res.statusCode);
    await relay.recorder.record(ctx, {
      answer: { json: answerText(text, json) },
      firstByteAt: new Date(),
      error: { status: res.statusCode, message },
      usage: (json as any)?.usage,
    });
    throw res.statusCode >= 400
      ? agentError(res, message)
      : new GatewayError(502, message, { type: 'upstream_error', code: 'bad_upstream_stream' });
  }

  reply.hijack();
  const out = reply.raw;
  out.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const write = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain', { signal: link.signal });
  };
  const translator = ctx.dialect?.stream();
  const passThrough = asked.tokenIds && asked.logprobs;
  // The data of every chunk the span is built from (record-line.ts), as received; the usage, for the budget now.
  const chunks: string[] = [];
  let usage: any = null;
  let firstByteAt: Date | null = null;
  let error: { status: number | null; message: string } | null = null;
  let done = false;
  let bytes = 0;
  try {
    // One write to the agent per upstream read (the chunks it brought), not one per chunk.
    for await (const batch of sseBatches(res.body)) {
      firstByteAt ??= new Date();
      let out = '';
      let stop = false;
      for (const data of batch) {
        bytes += data.length;
        if (bytes > upstream.maxResponseBytes) {
          error = { status: null, message: new ResponseTooLargeError(upstream.maxResponseBytes).message };
          res.body.destroy();
          stop = true;
          break;
        }
        if (data === '[DONE]') {
          done = stop = true;
          break;
        }
        const chunk = tryParse(data) as any;
        if (chunk === undefined) continue;
        if (chunk.error) {
          error = { status: chunk.error.code ?? null, message: String(chunk.error.message ?? 'upstream stream error') };
          stop = true;
          break;
        }
        const text = answerText(data, chunk);
        chunks.push(text);
        if (chunk.usage) usage = chunk.usage;
        if (translator) out += translator.chunk(chunk);
        // Nothing to strip (the agent asked for the ids and logprobs): the chunk goes out as received.
        else if (asked.usage || !isUsageOnlyChunk(chunk))
          out += `data: ${passThrough ? text : JSON.stringify(stripExtensions(chunk, asked))}\n\n`;
      }
      if (out) await write(out);
      if (stop) break;
    }
    if (!done && !error) error = { status: null, message: 'upstream stream ended before [DONE]' };
    if (error) await upstreamFailed(relay, ctx, 'stream_interrupted', null);
  } catch (err) {
    error = {
      status: null,
      message: link.gone ? 'client disconnected' : `upstream stream failed: ${(err as Error).message}`,
    };
    if (!link.gone) await upstreamFailed(relay, ctx, 'stream_interrupted', null);
    res.body.destroy();
  }
  try {
    const retokenized = error
      ? null
      : await teacherTokens(relay, ctx, () => assembledAnswer(ctx.endpoint, chunks), link);
    await relay.recorder.record(ctx, { answer: { chunks }, firstByteAt, error, usage, retokenized });
    countCompletion(ctx.rollout, { usage });
  } catch (err) {
    request.log.error({ err }, 'span could not be made durable');
    error ??= { status: 500, message: 'gateway could not record the call' };
  }
  if (!link.gone && translator) {
    out.end(translator.end(error));
  } else if (!link.gone) {
    if (error)
      out.write(`data: ${JSON.stringify(errorBody(error.message, 'upstream_error', 'stream_interrupted'))}\n\n`);
    else out.write('data: [DONE]\n\n');
    out.end();
  }
  return reply;
}

async function failBeforeFirstByte(
  relay: RelayDeps,
  ctx: CallContext,
  err: unknown,
  link: Cancellation,
): Promise<never> {
  const tooLarge = err instanceof ResponseTooLargeError;
  const message = link.gone
    ? 'client disconnected'
    : tooLarge
      ? err.message
      : `upstream unreachable: ${(err as Error).message}`;
  if (link.gone) relay.metrics.upstreamErrors.inc({ kind: 'client_abort' });
  else await upstreamFailed(relay, ctx, 'connect', null);
  await relay.recorder.record(ctx, { answer: { json: 'null' }, firstByteAt: null, error: { status: null, message } });
  throw new GatewayError(502, message, {
    type: 'upstream_error',
    code: tooLarge ? 'upstream_response_too_large' : 'upstream_unreachable',
  });
}

/**
 * Counts a failure on the model side. A 404 is one too (the gateway chose the model, so an unknown one is not the
 * agent's fault); other 4xx are the agent's own bad requests — except a teacher's: whatever it refuses (a bad key, a
 * field it does not take), the attempt says nothing about the agent, so every teacher failure is an infra failure.
 */
async function upstreamFailed(relay: RelayDeps, ctx: CallContext, kind: string, status: number | null): Promise<void> {
  relay.metrics.upstreamErrors.inc({ kind });
  const agentsFault = status !== null && status >= 400 && status < 500 && status !== 404 && status !== 429;
  if (agentsFault && !ctx.teacher) return;
  // Made durable before the agent hears of it: a gateway restart must not turn this attempt back into a clean one.
  await relay.registry
    .noteUpstreamFailure(ctx.rollout)
    .catch((err: unknown) => relay.log.error({ err }, 'could not persist an upstream failure'));
}

// Exhausted 429s keep their status and Retry-After so the agent's SDK backs off; 5xx become 502; other 4xx pass through.
function agentError(res: { statusCode: number; headers: UpstreamHeaders }, message: string): GatewayError {
  const status = res.statusCode;
  if (status === 429) {
    const retryAfter = header(res.headers, 'retry-after');
    return new GatewayError(429, message, {
      code: 'upstream_rate_limited',
      headers: retryAfter ? { 'retry-after': retryAfter } : {},
    });
  }
  if (status >= 500 || status < 400)
    return new GatewayError(502, message, { type: 'upstream_error', code: `upstream_${status}` });
  return new GatewayError(status, message, { type: typeForStatus(status), code: 'upstream_rejected' });
}

function upstreamMessage(json: any, text: string, status: number): string {
  const inner = json?.error?.message ?? json?.detail ?? json?.message ?? text.slice(0, 500);
  return `upstream ${status}: ${typeof inner === 'string' ? inner : JSON.stringify(inner)}`;
}

/** The answer for the call record: as received when it parsed (one line), else JSON null. */
function answerText<T extends string | Buffer>(text: T, parsed: unknown): T | string {
  return parsed === undefined ? 'null' : oneLine(text, parsed);
}
