/* eslint-disable @typescript-eslint/no-explicit-any -- engine JSON */
import type { Span } from '../../contracts/span.js';
import type { RolloutRecord } from '../registry/rollout-registry.js';
import type { Cancellation } from '../routes/client-link.js';
import type { SpanMeta } from '../../storage/call-records.js';
import { StreamAssembler } from '../../storage/stream-assembler.js';
import { Upstream, type UpstreamOptions } from './model-client.js';

/** A rollout's teacher (run config `teacher`), as its registration carries it. */
export type TeacherRef = NonNullable<RolloutRecord['teacher']>;

/** The teacher a call goes to: its connection and the model it is asked for. */
export interface TeacherCall {
  upstream: Upstream;
  model: string;
}

/**
 * One connection pool per teacher endpoint and key variable, opened at a rollout's first teacher call. The key is read
 * from the gateway's environment then (the run config names only the variable); an unset variable sends no key.
 */
export class TeacherUpstreams {
  private readonly pools = new Map<string, Upstream>();

  constructor(
    private readonly env: Readonly<Record<string, string | undefined>>,
    private readonly opts: UpstreamOptions = {},
  ) {}

  for(teacher: TeacherRef): TeacherCall {
    const id = `${teacher.baseUrl}\n${teacher.apiKeyEnv}`;
    let upstream = this.pools.get(id);
    if (!upstream) {
      // The relay asks `/v1/chat/completions` below the upstream's base; a teacher's base URL already ends in /v1.
      const base = new URL(teacher.baseUrl);
      base.pathname = base.pathname.replace(/\/v1\/?$/, '');
      upstream = new Upstream(base.toString(), { ...this.opts, apiKey: this.env[teacher.apiKeyEnv] || undefined });
      this.pools.set(id, upstream);
    }
    return { upstream, model: teacher.model };
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((u) => u.close()));
    this.pools.clear();
  }
}

/** The body sent to a teacher: the agent's request under the teacher's model, no engine extensions (a real API refuses them). */
export function teacherBody(
  body: any,
  model: string,
  sampling?: { temperature?: number; top_p?: number } | null,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, ...sampling, model };
  // The usage is what the budget counts; OpenAI-compatible servers send it in a last chunk when asked.
  if (body.stream === true) out.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
  return out;
}

/** A teacher's answer in the student's tokens: what the span holds instead of engine ids (Span.tokens). */
export type Retokenized = NonNullable<SpanMeta['retokenized']>;

/** The student's tokenizer could not render a teacher's call: the call is not training data, and the attempt is infra-failed. */
export class RetokenizeError extends Error {
  constructor(message: string) {
    super(`retokenizing a teacher's answer: ${message}`);
    this.name = 'RetokenizeError';
  }
}

/** A streamed answer's chunks (the data of each SSE event, as recorded) as the whole answer they make. */
export function assembledAnswer(endpoint: Span['endpoint'], chunks: readonly string[]): any {
  const assembler = new StreamAssembler(endpoint);
  for (const c of chunks) assembler.add(JSON.parse(c));
  return assembler.response();
}

/**
 * The teacher's prompt and answer as the student's model server tokenizes them (vLLM's POST /tokenize, which Volt's
 * server implements too): the chat prompt with its generation prompt, then the whole chat with the answer as a closed
 * assistant turn; the completion is what the second adds to the first. This is the one place Volt retokenizes: a
 * teacher's own ids are in its vocabulary, not the student's, and an external API returns none.
 */
export async function retokenize(
  student: Upstream,
  policyModel: string,
  endpoint: Span['endpoint'],
  upstreamRequest: any,
  answer: any,
  cancel: Cancellation,
): Promise<Retokenized> {
  const choice = answer?.choices?.find((c: any) => c?.index === 0) ?? answer?.choices?.[0];
  if (!choice) throw new RetokenizeError('the answer has no choice');
  const tokenize = async (body: object): Promise<number[]> => {
    const res = await student.postBuffered('/tokenize', JSON.stringify({ model: policyModel, ...body }), cancel);
    const parsed = res.statusCode === 200 ? (JSON.parse(res.text) as { tokens?: unknown }) : null;
    if (!parsed || !Array.isArray(parsed.tokens) || !parsed.tokens.every((t) => Number.isInteger(t) && t >= 0))
      throw new RetokenizeError(`the model server's /tokenize answered ${res.statusCode}: ${res.text.slice(0, 300)}`);
    return parsed.tokens as number[];
  };
  let prompt: number[];
  let whole: number[];
  if (endpoint === 'chat.completions') {
    const { messages, tools } = upstreamRequest;
    const message = choice.message ?? {};
    const turn: Record<string, unknown> = { role: 'assistant', content: message.content ?? null };
    if (Array.isArray(message.tool_calls) && message.tool_calls.length) turn.tool_calls = message.tool_calls;
    [prompt, whole] = await Promise.all([
      tokenize({ messages, tools, add_generation_prompt: true }),
      tokenize({ messages: [...messages, turn], tools, add_generation_prompt: false }),
    ]);
  } else {
    const text = typeof upstreamRequest.prompt === 'string' ? upstreamRequest.prompt : null;
    if (text === null) throw new RetokenizeError('a teacher completion needs a text prompt');
    [prompt, whole] = await Promise.all([
      tokenize({ prompt: text }),
      tokenize({ prompt: text + String(choice.text ?? '') }),
    ]);
  }
  const extends_ = whole.length > prompt.length && prompt.every((t, i) => whole[i] === t);
  if (!extends_) throw new RetokenizeError("the chat with the answer does not extend the prompt's tokens");
  return { promptTokenIds: prompt, completionTokenIds: whole.slice(prompt.length) };
}
