import type {
  MessageCreateParamsBase,
  RawMessageStreamEvent,
  ToolUseBlock,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { anthropicErrorBody } from './anthropic-error.js';
import { sseEvent, type StreamTranslator } from './dialect.js';
import { messageIds, messageUsage, stopReason, type WireMessage, type WireTextBlock } from './messages-response.js';

type Ping = { type: 'ping' };
/** The events whose payloads the real API sends without the SDK types' always-present nulls (messages-response.ts). */
type WireEvent =
  | { type: 'message_start'; message: WireMessage }
  | { type: 'content_block_start'; index: number; content_block: WireTextBlock | ToolUseBlock }
  | {
      type: 'message_delta';
      delta: Pick<WireMessage, 'stop_reason' | 'stop_sequence'>;
      usage: Omit<WireMessage['usage'], 'cache_creation' | 'service_tier'>;
    };

/**
 * Engine chat chunks -> Messages API stream events: `message_start`, `ping`, then per content block
 * `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) / `content_block_stop`, and at the
 * end `message_delta` (stop_reason, usage) and `message_stop`. A block is closed when the next one opens.
 */
export class MessagesStreamTranslator implements StreamTranslator {
  private started = false;
  private ids = messageIds(undefined);
  private blocks = 0;
  private open: { kind: 'text' } | { kind: 'tool'; chatIndex: number } | null = null;
  private toolUses = 0;
  private finish: string | null = null;
  private engineStop: unknown = null;
  private inputTokens = 0;
  private outputTokens = 0;
  private model: string;

  constructor(private readonly req: Pick<MessageCreateParamsBase, 'model' | 'stop_sequences'>) {
    this.model = req.model;
  }

  chunk(chunk: ChatCompletionChunk): string {
    let out = '';
    const extra = chunk as ChatCompletionChunk & { prompt_token_ids?: number[] };
    if (Array.isArray(extra.prompt_token_ids)) this.inputTokens = extra.prompt_token_ids.length;
    if (chunk.usage) {
      this.inputTokens = chunk.usage.prompt_tokens;
      this.outputTokens = chunk.usage.completion_tokens;
    }
    if (!this.started) out += this.start(chunk);
    const choice = chunk.choices?.find((c) => c.index === 0);
    if (!choice) return out;
    const text = choice.delta?.content;
    if (typeof text === 'string' && text !== '') {
      if (this.open?.kind !== 'text')
        out += this.close() + this.openBlock({ kind: 'text' }, { type: 'text', text: '' });
      out += this.emit({ type: 'content_block_delta', index: this.blocks - 1, delta: { type: 'text_delta', text } });
    }
    for (const tc of choice.delta?.tool_calls ?? []) {
      if (this.open?.kind !== 'tool' || this.open.chatIndex !== tc.index) {
        const id = tc.id || this.ids.toolUse(this.toolUses);
        this.toolUses++;
        out +=
          this.close() +
          this.openBlock(
            { kind: 'tool', chatIndex: tc.index },
            { type: 'tool_use', id, name: tc.function?.name ?? '', input: {}, caller: { type: 'direct' } },
          );
      }
      const args = tc.function?.arguments;
      if (args)
        out += this.emit({
          type: 'content_block_delta',
          index: this.blocks - 1,
          delta: { type: 'input_json_delta', partial_json: args },
        });
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    const engineStop = (choice as { stop_reason?: unknown }).stop_reason;
    if (engineStop != null) this.engineStop = engineStop;
    return out;
  }

  end(error: { message: string } | null): string {
    if (error) return sseEvent('error', anthropicErrorBody(500, error.message));
    let out = this.started ? '' : this.start(null);
    out += this.close();
    const { stop_reason, stop_sequence } = stopReason(this.finish ?? 'stop', this.engineStop, this.req);
    const usage = messageUsage(this.inputTokens, this.outputTokens);
    out += this.emit({
      type: 'message_delta',
      delta: { stop_reason, stop_sequence },
      usage: {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
    return out + this.emit({ type: 'message_stop' });
  }

  private start(chunk: ChatCompletionChunk | null): string {
    this.started = true;
    this.ids = messageIds(chunk?.id);
    if (typeof chunk?.model === 'string') this.model = chunk.model;
    const message: WireMessage = {
      id: this.ids.message,
      type: 'message' as const,
      role: 'assistant' as const,
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: messageUsage(this.inputTokens, 0),
    };
    return this.emit({ type: 'message_start', message }) + this.emit({ type: 'ping' });
  }

  private openBlock(kind: NonNullable<MessagesStreamTranslator['open']>, block: WireTextBlock | ToolUseBlock): string {
    this.open = kind;
    return this.emit({ type: 'content_block_start', index: this.blocks++, content_block: block });
  }

  private close(): string {
    if (!this.open) return '';
    this.open = null;
    return this.emit({ type: 'content_block_stop', index: this.blocks - 1 });
  }

  private emit(event: Exclude<RawMessageStreamEvent, { type: WireEvent['type'] }> | WireEvent | Ping): string {
    return sseEvent(event.type, event);
  }
}
