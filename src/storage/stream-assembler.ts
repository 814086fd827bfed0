/* eslint-disable @typescript-eslint/no-explicit-any -- chunks are engine JSON; only known fields are read */
interface ToolCallAcc {
  id?: string;
  type?: string;
  function: { name: string; arguments: string };
}

interface ChoiceAcc {
  index: number;
  role: string | null;
  text: string;
  toolCalls: ToolCallAcc[];
  tokenIds: number[] | null;
  logprobContent: unknown[] | null;
  tokenLogprobs: number[] | null;
  tokens: string[] | null;
  finishReason: string | null;
  /** vLLM's stop_reason (the stop string or token id that ended the choice), sent with the last chunk. */
  stopReason: string | number | null;
}

/**
 * Folds streamed chunks (chat or legacy completions) into the response a non-streaming call would have returned,
 * keeping the engine's per-chunk token ids and logprobs in order.
 */
export class StreamAssembler {
  private head: Record<string, unknown> = {};
  private choices = new Map<number, ChoiceAcc>();
  private usage: unknown = null;
  private promptTokenIds: number[] | null = null;
  chunks = 0;

  constructor(private readonly endpoint: 'chat.completions' | 'completions') {}

  add(chunk: any): void {
    this.chunks++;
    for (const k of ['id', 'created', 'model', 'system_fingerprint'] as const)
      if (chunk[k] != null) this.head[k] = chunk[k];
    if (Array.isArray(chunk.prompt_token_ids)) this.promptTokenIds = chunk.prompt_token_ids;
    if (chunk.usage) this.usage = chunk.usage;
    for (const c of Array.isArray(chunk.choices) ? chunk.choices : []) this.addChoice(c);
  }

  private addChoice(c: any): void {
    const index = typeof c.index === 'number' ? c.index : 0;
    let acc = this.choices.get(index);
    if (!acc) {
      acc = {
        index,
        role: null,
        text: '',
        toolCalls: [],
        tokenIds: null,
        logprobContent: null,
        tokenLogprobs: null,
        tokens: null,
        finishReason: null,
        stopReason: null,
      };
      this.choices.set(index, acc);
    }
    if (Array.isArray(c.prompt_token_ids) && !this.promptTokenIds) this.promptTokenIds = c.prompt_token_ids;
    if (Array.isArray(c.token_ids)) (acc.tokenIds ??= []).push(...c.token_ids);
    if (c.finish_reason != null) acc.finishReason = c.finish_reason;
    if (typeof c.stop_reason === 'string' || typeof c.stop_reason === 'number') acc.stopReason = c.stop_reason;
    const lp = c.logprobs;
    if (lp && Array.isArray(lp.content)) (acc.logprobContent ??= []).push(...lp.content);
    if (lp && Array.isArray(lp.token_logprobs)) (acc.tokenLogprobs ??= []).push(...lp.token_logprobs);
    if (lp && Array.isArray(lp.tokens)) (acc.tokens ??= []).push(...lp.tokens);
    if (typeof c.text === 'string') acc.text += c.text;
    const delta = c.delta ?? {};
    if (typeof delta.role === 'string') acc.role = delta.role;
    if (typeof delta.content === 'string') acc.text += delta.content;
    for (const tc of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      const i = typeof tc.index === 'number' ? tc.index : acc.toolCalls.length;
      const call = (acc.toolCalls[i] ??= { function: { name: '', arguments: '' } });
      if (tc.id) call.id = tc.id;
      if (tc.type) call.type = tc.type;
      if (tc.function?.name) call.function.name += tc.function.name;
      if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
    }
  }

  /** The assembled response in the non-streaming OpenAI shape (plus the engine's extension fields). */
  response(): Record<string, unknown> {
    const chat = this.endpoint === 'chat.completions';
    const choices = [...this.choices.values()]
      .sort((a, b) => a.index - b.index)
      .map((a) => {
        const base = {
          index: a.index,
          finish_reason: a.finishReason,
          stop_reason: a.stopReason,
          token_ids: a.tokenIds,
        };
        if (!chat) {
          const logprobs = a.tokenLogprobs ? { tokens: a.tokens, token_logprobs: a.tokenLogprobs } : null;
          return { ...base, text: a.text, logprobs };
        }
        const toolCalls = a.toolCalls
          .filter(Boolean)
          .map((t) => ({ id: t.id, type: t.type ?? 'function', function: t.function }));
        const message = {
          role: a.role ?? 'assistant',
          content: a.text === '' && toolCalls.length ? null : a.text,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        };
        return { ...base, message, logprobs: a.logprobContent ? { content: a.logprobContent } : null };
      });
    return {
      ...this.head,
      object: chat ? 'chat.completion' : 'text_completion',
      choices,
      usage: this.usage,
      prompt_token_ids: this.promptTokenIds,
    };
  }
}
