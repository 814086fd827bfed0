import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type {
  ResponseCreateParamsBase,
  ResponseFunctionToolCall,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseOutputText,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';
import { sseEvent, type StreamTranslator } from './dialect.js';
import { outputText, responseIds, responseObject, responseStatus, responseUsage } from './responses-response.js';
import { agentCallItem, engineTools, streamsAsFunction, type AgentTool } from './responses-tools.js';

type Logprob = NonNullable<ResponseOutputText['logprobs']>[number];
type OpenItem =
  | { kind: 'message'; index: number; id: string; text: string; logprobs: Logprob[] }
  | {
      kind: 'call';
      index: number;
      chatIndex: number;
      /** The engine's call; `streamed`: sent as a function_call as it comes, else as the agent's item when it ends. */
      call: { id: string; callId: string; name: string; arguments: string };
      streamed: boolean;
    };
// Distributive Omit: each event type keeps its own fields.
type EventBody = ResponseStreamEvent extends infer E
  ? E extends ResponseStreamEvent
    ? Omit<E, 'sequence_number'>
    : never
  : never;

/**
 * Engine chat chunks -> Responses API stream events (`response.created` ... `response.completed`), numbered by
 * `sequence_number`. Text opens a message item, each tool call a function_call item; an item is closed when the next
 * one opens or the stream ends.
 */
export class ResponsesStreamTranslator implements StreamTranslator {
  private seq = 0;
  private head: { id?: string; created?: number; model?: string } | null = null;
  private readonly items: OpenItem[] = [];
  private readonly done: ResponseOutputItem[] = [];
  private open: OpenItem | null = null;
  private finish: string | null = null;
  private usage: ResponseUsage | undefined;
  private readonly withLogprobs: boolean;
  private readonly tools: ReadonlyMap<string, AgentTool>;

  constructor(private readonly req: ResponseCreateParamsBase) {
    this.withLogprobs = req.include?.includes('message.output_text.logprobs') ?? false;
    this.tools = engineTools(req.tools).byName;
  }

  chunk(chunk: ChatCompletionChunk): string {
    let out = '';
    if (!this.head) {
      this.head = { id: chunk.id, created: chunk.created, model: chunk.model };
      const response = this.response([]);
      out += this.emit({ type: 'response.created', response }) + this.emit({ type: 'response.in_progress', response });
    }
    if (chunk.usage) this.usage = responseUsage(chunk.usage);
    const choice = chunk.choices?.find((c) => c.index === 0);
    if (!choice) return out;
    const text = choice.delta?.content;
    if (typeof text === 'string' && text !== '') out += this.addText(text, choice.logprobs?.content ?? []);
    for (const tc of choice.delta?.tool_calls ?? []) out += this.addToolCall(tc);
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  end(error: { message: string } | null): string {
    if (!this.head) this.head = {};
    if (error) return this.emit({ type: 'error', code: 'server_error', message: error.message, param: null });
    let out = this.close();
    // A reply with neither text nor tool calls still carries one (empty) message, as a non-streamed one does.
    if (!this.items.length) out += this.addText('', []) + this.close();
    const response = this.response(this.done);
    const status = responseStatus(this.finish).status;
    out += this.emit(
      status === 'completed' ? { type: 'response.completed', response } : { type: 'response.incomplete', response },
    );
    return out;
  }

  private ids() {
    return responseIds(this.head?.id);
  }

  private response(output: ResponseOutputItem[]) {
    return responseObject(
      this.req,
      this.head ?? {},
      output,
      output.length ? this.finish : undefined,
      output.length ? this.usage : undefined,
    );
  }

  private emit(event: EventBody): string {
    return sseEvent(event.type, { ...event, sequence_number: this.seq++ });
  }

  private addText(delta: string, logprobs: { token: string; logprob: number; bytes: number[] | null }[]): string {
    let out = '';
    if (this.open?.kind !== 'message') {
      out += this.close();
      const index = this.items.length;
      const id = index === 0 ? this.ids().message : `${this.ids().message}_${index}`;
      const item: OpenItem = { kind: 'message', index, id, text: '', logprobs: [] };
      this.items.push(item);
      this.open = item;
      out += this.emit({
        type: 'response.output_item.added',
        output_index: index,
        item: { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] },
      });
      out += this.emit({
        type: 'response.content_part.added',
        item_id: id,
        output_index: index,
        content_index: 0,
        part: outputText('', [], this.withLogprobs),
      });
    }
    const msg = this.open;
    if (delta === '') return out;
    const lps = this.withLogprobs
      ? logprobs.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes ?? [], top_logprobs: [] }))
      : [];
    msg.text += delta;
    msg.logprobs.push(...lps);
    return (
      out +
      this.emit({
        type: 'response.output_text.delta',
        item_id: msg.id,
        output_index: msg.index,
        content_index: 0,
        delta,
        logprobs: lps,
      })
    );
  }

  private addToolCall(tc: NonNullable<ChatCompletionChunk['choices'][number]['delta']['tool_calls']>[number]): string {
    let out = '';
    let open = this.open?.kind === 'call' && this.open.chatIndex === tc.index ? this.open : null;
    if (!open) {
      out += this.close();
      const index = this.items.length;
      const id = this.ids().call(this.items.filter((i) => i.kind === 'call').length);
      const name = tc.function?.name ?? '';
      const call = { id, callId: tc.id || id, name, arguments: '' };
      open = { kind: 'call', index, chatIndex: tc.index, call, streamed: streamsAsFunction(name, this.tools) };
      this.items.push(open);
      this.open = open;
      if (open.streamed)
        out += this.emit({
          type: 'response.output_item.added',
          output_index: index,
          item: this.callItem(open, 'in_progress'),
        });
    } else if (tc.function?.name) open.call.name += tc.function.name;
    const delta = tc.function?.arguments;
    if (delta) {
      open.call.arguments += delta;
      if (open.streamed)
        out += this.emit({
          type: 'response.function_call_arguments.delta',
          item_id: open.call.id,
          output_index: open.index,
          delta,
        });
    }
    return out;
  }

  private callItem(open: Extract<OpenItem, { kind: 'call' }>, status: 'in_progress' | 'completed') {
    return agentCallItem(open.call, this.tools, status);
  }

  private close(): string {
    const item = this.open;
    if (!item) return '';
    this.open = null;
    if (item.kind === 'call') {
      const done = this.callItem(item, 'completed');
      this.done.push(done);
      let out = '';
      // A custom or local shell call goes out whole, once its input is complete; a function call's arguments end.
      if (!item.streamed)
        out += this.emit({
          type: 'response.output_item.added',
          output_index: item.index,
          item: this.callItem(item, 'in_progress'),
        });
      else {
        const fn = done as ResponseFunctionToolCall;
        out += this.emit({
          type: 'response.function_call_arguments.done',
          item_id: item.call.id,
          output_index: item.index,
          name: fn.name,
          arguments: fn.arguments,
        });
      }
      return out + this.emit({ type: 'response.output_item.done', output_index: item.index, item: done });
    }
    const part = outputText(item.text, null, false);
    if (this.withLogprobs) part.logprobs = item.logprobs;
    const message: ResponseOutputMessage = {
      type: 'message',
      id: item.id,
      status: responseStatus(this.finish).status,
      role: 'assistant',
      content: [part],
    };
    this.done.push(message);
    return (
      this.emit({
        type: 'response.output_text.done',
        item_id: item.id,
        output_index: item.index,
        content_index: 0,
        text: item.text,
        logprobs: part.logprobs ?? [],
      }) +
      this.emit({
        type: 'response.content_part.done',
        item_id: item.id,
        output_index: item.index,
        content_index: 0,
        part,
      }) +
      this.emit({ type: 'response.output_item.done', output_index: item.index, item: message })
    );
  }
}
