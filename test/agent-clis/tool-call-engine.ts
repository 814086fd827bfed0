import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// FAKE engine: SmolLM2-135M rarely writes a well-formed tool call, so a real agent's tool loop is driven by this
// scripted chat server instead. It answers like Volt's model server (vLLM's extension fields, one token per chunk):
// a call that offers a tool listing files and does not end in a tool result gets one call of it, any other a text.

/** The tool of each agent that lists the workdir, and its arguments: Claude Code, Codex, mini-swe-agent, examples/agent-clis. */
const LIST_CALLS: Record<string, Record<string, unknown>> = {
  Bash: { command: 'ls', description: 'List files' },
  exec_command: { cmd: 'ls' },
  bash: { command: 'ls' },
  list_files: {},
};

interface ChatBody {
  model: string;
  stream?: boolean;
  messages: { role: string }[];
  tools?: { function: { name: string } }[];
}

function answer(body: ChatBody, n: number) {
  const tool = body.tools?.map((t) => t.function.name).find((name) => name in LIST_CALLS);
  const afterTool = body.messages.at(-1)?.role === 'tool';
  const call = (name: string, args: Record<string, unknown>) => ({
    text: '',
    call: { id: `call_fake_${n}`, type: 'function', function: { name, arguments: JSON.stringify(args) } },
    tokens: [3, 5, 7, 11],
  });
  if (tool && !afterTool) return call(tool, LIST_CALLS[tool]!);
  // mini-swe-agent answers only tool calls, and ends on this command's output.
  if (tool === 'bash') return call('bash', { command: 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT' });
  return { text: 'I listed the files.', call: null, tokens: [13, 17, 19, 23] };
}

export interface ToolCallEngine {
  url: string;
  requests: ChatBody[];
  close(): Promise<void>;
}

export async function startToolCallEngine(): Promise<ToolCallEngine> {
  const requests: ChatBody[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions') return void res.writeHead(404).end();
      const body = JSON.parse(raw) as ChatBody;
      requests.push(body);
      const { text, call, tokens } = answer(body, requests.length);
      const promptIds = [1, 2, body.messages.length];
      const head = {
        id: `chatcmpl-fake-${requests.length}`,
        created: 0,
        model: body.model,
        system_fingerprint: `${body.model}@base`,
      };
      const finish = call ? 'tool_calls' : 'stop';
      const logprobs = (ids: number[]) => ({
        content: ids.map((id) => ({ token: `t${id}`, logprob: -0.5, top_logprobs: [] })),
      });
      const usage = {
        prompt_tokens: promptIds.length,
        completion_tokens: tokens.length,
        total_tokens: promptIds.length + tokens.length,
      };
      if (!body.stream) {
        const message = { role: 'assistant', content: call ? null : text, ...(call ? { tool_calls: [call] } : {}) };
        const choice = { index: 0, message, logprobs: logprobs(tokens), finish_reason: finish, token_ids: tokens };
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({ ...head, object: 'chat.completion', prompt_token_ids: promptIds, choices: [choice], usage }),
        );
      }
      const chunk = (extra: Record<string, unknown>) =>
        `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', ...extra })}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        chunk({
          prompt_token_ids: promptIds,
          choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
        }),
      );
      tokens.forEach((id, i) => {
        const last = i === tokens.length - 1;
        const delta = call
          ? last
            ? { content: null, tool_calls: [{ index: 0, ...call }] }
            : { content: '' }
          : { content: last ? text : '' };
        res.write(
          chunk({
            choices: [
              { index: 0, delta, logprobs: logprobs([id]), finish_reason: last ? finish : null, token_ids: [id] },
            ],
          }),
        );
      });
      res.write(chunk({ choices: [], usage }));
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
