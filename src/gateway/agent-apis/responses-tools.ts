import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import type {
  ResponseCustomToolCall,
  ResponseFunctionToolCall,
  ResponseOutputItem,
  Tool,
} from 'openai/resources/responses/responses';
import type { HostedTools } from '../../contracts/hosted-tools.js';
import { GatewayError } from '../routes/openai-error.js';

/** The agent's own kind of tool behind one engine function, so its calls go back as the agent's own item type. */
export type AgentTool =
  | { kind: 'function'; name: string; namespace?: string }
  | { kind: 'custom'; name: string; namespace?: string }
  | { kind: 'local_shell' };

/** The engine's function tools for a Responses request's tools, and the agent's tool behind each engine name. */
export interface EngineTools {
  chat: ChatCompletionFunctionTool[];
  byName: Map<string, AgentTool>;
  /** Hosted tools dropped and tools renamed, for the span (Span.translation). */
  notes: string[];
}

type ToolLike = { type: string; name?: string; description?: string | null; [k: string]: unknown };

// Custom (freeform) tools take one string; the engine sees a function with that one string parameter.
const CUSTOM_PARAMETERS = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The raw input for the tool.' } },
  required: ['input'],
};
const LOCAL_SHELL = {
  name: 'local_shell',
  description: 'Runs a command on the local machine and returns its output.',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'array', items: { type: 'string' }, description: 'The command and its arguments (argv).' },
      working_directory: { type: 'string' },
      timeout_ms: { type: 'integer' },
    },
    required: ['command'],
  },
};

const refuse = (param: string, message: string) =>
  new GatewayError(400, `${param}: ${message}`, { code: 'unsupported_parameter', param });

/** A namespaced tool's name for the engine: `<namespace>.<tool>` (the agent gets `name` and `namespace` back apart). */
export const engineName = (name: string, namespace?: string | null) => (namespace ? `${namespace}.${name}` : name);

/**
 * Function tools pass through; `namespace` tools are flattened into their functions and custom tools; `custom` tools
 * become a function of one string; `local_shell` a function of argv. Hosted tools (web_search, file_search,
 * code_interpreter, image_generation, MCP, ...) run on OpenAI's side, which a served policy has none of: dropped.
 */
export function engineTools(tools: readonly Tool[] | null | undefined, hosted: HostedTools = 'drop'): EngineTools {
  const out: EngineTools = { chat: [], byName: new Map(), notes: [] };
  const add = (fn: ChatCompletionFunctionTool['function'], agent: AgentTool, param: string) => {
    if (out.byName.has(fn.name)) throw refuse(`${param}.name`, `tool name '${fn.name}' is used twice`);
    out.byName.set(fn.name, agent);
    out.chat.push({ type: 'function', function: fn });
  };
  const addOne = (t: ToolLike, param: string, namespace?: string) => {
    const name = engineName(String(t.name ?? ''), namespace);
    const described = (fn: ChatCompletionFunctionTool['function']) =>
      typeof t.description === 'string' ? { ...fn, description: t.description } : fn;
    if (t.type === 'function') {
      const fn: ChatCompletionFunctionTool['function'] = {
        name,
        parameters: (t.parameters as Record<string, unknown> | null) ?? { type: 'object', properties: {} },
      };
      if (typeof t.strict === 'boolean') fn.strict = t.strict;
      add(described(fn), { kind: 'function', name: String(t.name), ...(namespace ? { namespace } : {}) }, param);
    } else if (t.type === 'custom') {
      add(
        described({ name, parameters: CUSTOM_PARAMETERS }),
        { kind: 'custom', name: String(t.name), ...(namespace ? { namespace } : {}) },
        param,
      );
    } else if (t.type === 'local_shell' && !namespace) {
      add(LOCAL_SHELL, { kind: 'local_shell' }, param);
    } else if (hosted === 'refuse') {
      throw refuse(`${param}.type`, `hosted tool '${t.type}' is not supported (this run refuses hosted tools)`);
    } else {
      out.notes.push(`${param}: hosted tool '${t.type}' dropped (the policy cannot run it)`);
    }
  };
  (tools ?? []).forEach((tool, i) => {
    const t = tool as unknown as ToolLike;
    if (t.type !== 'namespace') return addOne(t, `tools.${i}`);
    const inner = Array.isArray(t.tools) ? (t.tools as ToolLike[]) : [];
    inner.forEach((it, j) => addOne(it, `tools.${i}.tools.${j}`, String(t.name)));
    out.notes.push(
      `tools.${i}: namespace '${String(t.name)}' flattened into ${inner.length} '${String(t.name)}.<tool>' function(s)`,
    );
  });
  return out;
}

/** The agent's item for one engine tool call: a function_call (with its namespace), custom_tool_call or local_shell_call. */
export function agentCallItem(
  call: { id: string; callId: string; name: string; arguments: string },
  byName: ReadonlyMap<string, AgentTool>,
  status: 'in_progress' | 'completed',
): ResponseOutputItem {
  const tool = byName.get(call.name);
  if (tool?.kind === 'custom') {
    const item: ResponseCustomToolCall = {
      type: 'custom_tool_call',
      id: call.id,
      call_id: call.callId,
      name: tool.name,
      input: customInput(call.arguments),
    };
    if (tool.namespace) item.namespace = tool.namespace;
    return item;
  }
  if (tool?.kind === 'local_shell') {
    const args = parseObject(call.arguments);
    const command = Array.isArray(args?.command) ? args.command.map(String) : [];
    const action: Extract<ResponseOutputItem, { type: 'local_shell_call' }>['action'] = {
      type: 'exec',
      command,
      env: {},
    };
    if (typeof args?.working_directory === 'string') action.working_directory = args.working_directory;
    if (typeof args?.timeout_ms === 'number') action.timeout_ms = args.timeout_ms;
    return { type: 'local_shell_call', id: call.id, call_id: call.callId, status, action };
  }
  const item: ResponseFunctionToolCall = {
    type: 'function_call',
    id: call.id,
    call_id: call.callId,
    name: tool?.kind === 'function' ? tool.name : call.name,
    arguments: call.arguments,
    status,
  };
  if (tool?.kind === 'function' && tool.namespace) item.namespace = tool.namespace;
  return item;
}

/** True when an engine tool call goes back as a function_call item, whose arguments can stream as they come. */
export function streamsAsFunction(name: string, byName: ReadonlyMap<string, AgentTool>): boolean {
  const kind = byName.get(name)?.kind;
  return kind === undefined || kind === 'function';
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

// The model was asked for `{"input": "..."}`; anything else it wrote is passed on as the raw input.
function customInput(args: string): string {
  const v = parseObject(args)?.input;
  return typeof v === 'string' ? v : args;
}
