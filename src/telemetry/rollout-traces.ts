import { context, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { VoltEnv } from '../config/env.js';
import type { ScoredRolloutRecord } from '../contracts/rewards.js';
import type { Span } from '../contracts/span.js';
import { requestMessages } from '../prompts/message-text.js';

/**
 * Rollouts as OpenTelemetry traces, following the GenAI semantic conventions: a rollout is a trace whose root span
 * (`invoke_agent`) covers the agent's run, and each model call a child span (`chat <model>` / `text_completion
 * <model>`) with its models, token usage, finish reasons and, when enabled, its messages. Sent over OTLP/HTTP
 * (protobuf) to any collector (Jaeger, Grafana Tempo, Phoenix, Langfuse) by the official SDK.
 */
export interface RolloutTraceSettings {
  /** OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces. */
  url: string;
  /** Also record the messages (gen_ai.input.messages / gen_ai.output.messages): prompts and answers leave Volt. */
  messages: boolean;
  headers?: Record<string, string>;
}

/** VOLT_OTLP_TRACES_URL turns the export on (off when unset); VOLT_OTLP_TRACES_MESSAGES=true adds the messages. */
export function rolloutTraceSettings(env: Pick<VoltEnv, 'VOLT_OTLP_TRACES_URL' | 'VOLT_OTLP_TRACES_MESSAGES'>) {
  return env.VOLT_OTLP_TRACES_URL ? { url: env.VOLT_OTLP_TRACES_URL, messages: env.VOLT_OTLP_TRACES_MESSAGES } : null;
}

const ms = (iso: string) => Date.parse(iso);

/** gen_ai.provider.name of the API family the agent spoke (the engine behind it is the run's policy). */
const provider = (span: Span) => (span.api === 'messages' ? 'anthropic' : 'openai');

function requestAttributes(body: unknown): Attributes {
  const b = (body ?? {}) as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const maxTokens = num(b.max_tokens) ?? num(b.max_completion_tokens) ?? num(b.max_output_tokens);
  const out: Attributes = {};
  if (num(b.temperature) !== undefined) out['gen_ai.request.temperature'] = num(b.temperature);
  if (num(b.top_p) !== undefined) out['gen_ai.request.top_p'] = num(b.top_p);
  if (maxTokens !== undefined) out['gen_ai.request.max_tokens'] = maxTokens;
  return out;
}

/** The attributes of one model call's span (GenAI conventions, plus volt.* for where it sits in the run). */
export function callAttributes(span: Span, messages: boolean): Attributes {
  const operation = span.endpoint === 'completions' ? 'text_completion' : 'chat';
  const choices = span.choices;
  const attrs: Attributes = {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': provider(span),
    'gen_ai.request.model': span.requestedModel ?? span.servedBy.model,
    'gen_ai.response.model': span.servedBy.version ?? span.servedBy.model,
    'gen_ai.response.finish_reasons': choices.map((c) => c.finishReason ?? 'unknown'),
    ...requestAttributes(span.request.body),
    'volt.span_id': span.spanId,
    'volt.seq': span.seq,
    'volt.api': span.api,
    'volt.call_kind': span.callKind,
    'volt.stream': span.stream,
  };
  const id = (span.response as { id?: unknown } | null)?.id;
  if (typeof id === 'string') attrs['gen_ai.response.id'] = id;
  if (span.usage) {
    attrs['gen_ai.usage.input_tokens'] = span.usage.prompt_tokens;
    attrs['gen_ai.usage.output_tokens'] = span.usage.completion_tokens;
  }
  if (span.promptOverlay) attrs['volt.prompt_overlay'] = span.promptOverlay.version;
  if (messages) {
    attrs['gen_ai.input.messages'] = JSON.stringify(
      requestMessages(span.request.body).map((m) => ({ role: m.role, parts: [{ type: 'text', content: m.content }] })),
    );
    attrs['gen_ai.output.messages'] = JSON.stringify(
      choices.map((c) => ({
        role: 'assistant',
        parts: [
          ...(c.text ? [{ type: 'text', content: c.text }] : []),
          ...(c.toolCalls ?? []).map((t) => ({ type: 'tool_call', ...(t as Record<string, unknown>) })),
        ],
        finish_reason: c.finishReason ?? 'unknown',
      })),
    );
  }
  return attrs;
}

export interface RolloutTraceInput {
  runId: string;
  iteration: number;
  mode: 'train' | 'eval';
  record: ScoredRolloutRecord;
  spans: Span[];
}

/** One exporter per worker process; `export` queues a rollout's trace, `flush` sends what is queued. */
export class RolloutTraceExporter {
  private readonly provider: TracerProvider;

  constructor(
    private readonly settings: RolloutTraceSettings,
    serviceName = 'volt',
  ) {
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': serviceName }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: new OTLPTraceExporter({ url: settings.url, headers: settings.headers ?? {} }),
          maxExportBatchSize: 512,
          scheduledDelayMillis: 1000,
          // A rollout's spans are a few dozen; a long iteration queues thousands before a flush.
          maxQueueSize: 65_536,
        }),
      ],
    });
  }

  export(input: RolloutTraceInput): void {
    const tracer = this.provider.getTracer('volt.rollouts');
    const { record, spans } = input;
    const calls = [...spans].sort((a, b) => a.seq - b.seq);
    const start = calls.length ? Math.min(...calls.map((s) => ms(s.startedAt))) : Date.now();
    const end = calls.length ? Math.max(...calls.map((s) => ms(s.endedAt))) : start;
    const rootAttrs: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.conversation.id': `${input.runId}/${input.iteration}/${record.rolloutId}/${record.attempt}`,
      'volt.run_id': input.runId,
      'volt.iteration': input.iteration,
      'volt.mode': input.mode,
      'volt.rollout_id': record.rolloutId,
      'volt.attempt': record.attempt,
      'volt.task_id': record.taskId,
      'volt.group_id': record.groupId,
      'volt.outcome': record.outcome,
      'volt.flags': record.flags,
    };
    if (record.taskKind) rootAttrs['volt.task_kind'] = record.taskKind;
    if (record.reward !== null) rootAttrs['volt.reward'] = record.reward;
    const root = tracer.startSpan(
      `invoke_agent ${input.runId}`,
      { kind: SpanKind.INTERNAL, startTime: start, attributes: rootAttrs },
      context.active(),
    );
    if (record.outcome !== 'succeeded')
      root.setStatus({ code: SpanStatusCode.ERROR, message: record.error ?? record.outcome });
    const parent = trace.setSpan(context.active(), root);
    for (const call of calls) {
      const attrs = callAttributes(call, this.settings.messages);
      const model = String(attrs['gen_ai.request.model']);
      const child = tracer.startSpan(
        `${String(attrs['gen_ai.operation.name'])} ${model}`,
        { kind: SpanKind.CLIENT, startTime: ms(call.startedAt), attributes: attrs },
        parent,
      );
      if (call.status === 'error') {
        child.setAttribute('error.type', call.error?.status ? String(call.error.status) : 'error');
        child.setStatus({ code: SpanStatusCode.ERROR, message: call.error?.message ?? 'error' });
      }
      child.end(ms(call.endedAt));
    }
    root.end(end);
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
