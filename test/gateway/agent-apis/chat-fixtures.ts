import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';

/** Engine answers in chat-completions shape (as Volt's model server and vLLM send them), for the translators. */
export function chatAnswer(
  over: {
    content?: string | null;
    finish?: string;
    stopReason?: string | null;
    toolCalls?: { id: string; name: string; arguments: string }[];
  } = {},
): ChatCompletion {
  const message = {
    role: 'assistant' as const,
    content: over.content === undefined ? 'Blue.' : over.content,
    refusal: null,
    ...(over.toolCalls
      ? {
          tool_calls: over.toolCalls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : {}),
  };
  return {
    id: 'chatcmpl-abc123',
    object: 'chat.completion',
    created: 1_764_000_000,
    model: 'smollm2-135m-instruct',
    choices: [
      {
        index: 0,
        message,
        logprobs: null,
        finish_reason: (over.finish ?? 'stop') as 'stop',
        stop_reason: over.stopReason ?? null,
      } as ChatCompletion['choices'][number],
    ],
    usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
  };
}

const head = {
  id: 'chatcmpl-abc123',
  object: 'chat.completion.chunk' as const,
  created: 1_764_000_000,
  model: 'smollm2-135m-instruct',
};

/** A streamed answer: role chunk, one chunk per text piece, tool calls whole at the end (as Volt's server sends them), usage. */
export function chatChunks(
  pieces: string[],
  end: {
    finish?: string;
    stopReason?: string | null;
    toolCalls?: { id: string; name: string; arguments: string }[];
  } = {},
): ChatCompletionChunk[] {
  const chunks: ChatCompletionChunk[] = [
    {
      ...head,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }],
    },
  ];
  for (const p of pieces)
    chunks.push({ ...head, choices: [{ index: 0, delta: { content: p }, finish_reason: null, logprobs: null }] });
  const toolCalls = end.toolCalls?.map((c, index) => ({
    index,
    id: c.id,
    type: 'function' as const,
    function: { name: c.name, arguments: c.arguments },
  }));
  const last = {
    index: 0,
    delta: toolCalls ? { content: null, tool_calls: toolCalls } : { content: '' },
    finish_reason: (end.finish ?? 'stop') as 'stop',
    logprobs: null,
    stop_reason: end.stopReason ?? null,
  };
  chunks.push({ ...head, choices: [last as ChatCompletionChunk['choices'][number]] });
  chunks.push({
    ...head,
    choices: [],
    usage: { prompt_tokens: 11, completion_tokens: pieces.length + 1, total_tokens: 12 + pieces.length },
  });
  return chunks;
}

/** SSE text -> [event name, parsed data] pairs. */
export function parseSse(text: string): [string, Record<string, unknown>][] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? 'null';
      return [event, JSON.parse(data) as Record<string, unknown>];
    });
}
