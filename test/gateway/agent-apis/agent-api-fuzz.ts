import fs from 'node:fs';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';

/**
 * Structured-mutation fuzzing of the translated APIs: the agent CLIs' captured first requests (compacted), each case
 * with 1-3 mutations at random places of the JSON (a field deleted, its value replaced by a random JSON value or by
 * one of another type, wrapped in a list), sent with `app.inject`. Shared by the test and `bench/agent-api-fuzz.ts`.
 */
export interface FuzzTarget {
  api: 'responses' | 'messages';
  /** Under /r/<token>. */
  path: string;
  base: Record<string, unknown>;
}

const capture = (name: string) =>
  (JSON.parse(fs.readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8')) as { body: unknown }).body;

// Every shape kept, the bulk cut: strings to 120 characters, lists to their first four and last two entries.
function compact(v: unknown): unknown {
  if (typeof v === 'string') return v.slice(0, 120);
  if (Array.isArray(v)) return (v.length > 6 ? [...v.slice(0, 4), ...v.slice(-2)] : v).map(compact);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, compact(x)]));
  return v;
}

export const FUZZ_TARGETS: FuzzTarget[] = [
  {
    api: 'responses',
    path: '/v1/responses',
    base: compact(capture('codex-0.171.0-responses.json')) as Record<string, unknown>,
  },
  {
    api: 'messages',
    path: '/v1/messages?beta=true',
    base: compact(capture('claude-code-2.1.197-messages.json')) as Record<string, unknown>,
  },
];

type Path = (string | number)[];

function paths(v: unknown, at: Path = [], out: Path[] = []): Path[] {
  if (at.length) out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

type Mutation = { at: number; op: 'delete' | 'replace' | 'retype' | 'wrap'; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('delete', 'replace', 'retype', 'wrap'),
  value: fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.constantFrom(null, '', 'x', 0, -1, 1e12, 0.5, true, [], {}, [null], { type: 'x' }),
  ),
});

const RETYPE = (v: unknown, value: unknown): unknown =>
  typeof v === 'string'
    ? typeof value === 'string'
      ? 7
      : value
    : typeof v === 'number'
      ? String(v)
      : typeof v === 'boolean'
        ? 'true'
        : Array.isArray(v)
          ? (v[0] ?? {})
          : v && typeof v === 'object'
            ? [v]
            : 'x';

function apply(body: Record<string, unknown>, m: Mutation): void {
  const all = paths(body);
  if (!all.length) return;
  const at = all[m.at % all.length]!;
  const parent = at.slice(0, -1).reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], body) as Record<
    string | number,
    unknown
  >;
  const key = at.at(-1)!;
  if (m.op === 'delete') {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else if (m.op === 'replace') parent[key] = m.value;
  else if (m.op === 'retype') parent[key] = RETYPE(parent[key], m.value);
  else parent[key] = [parent[key]];
}

/**
 * `n` mutated bodies of a target, the same for the same seed: every other one asks for a whole answer
 * (`stream: false`) before it is mutated, so both answer paths are fuzzed.
 */
export function mutatedBodies(target: FuzzTarget, n: number, seed: number): Record<string, unknown>[] {
  return fc.sample(fc.array(mutation, { minLength: 1, maxLength: 3 }), { numRuns: n, seed }).map((ms, i) => {
    const body = { ...structuredClone(target.base), stream: i % 2 === 0 };
    for (const m of ms) apply(body, m);
    return body;
  });
}

export interface FuzzResult {
  statuses: Map<number, number>;
  /** Statuses by the answer's kind: `"stream 200"` (an SSE answer), `"whole 400"`, … */
  byKind: Map<string, number>;
  /** The first few answers that were 5xx, 4xx not in the API's own error shape, or streams carrying an error event. */
  bad: { status: number; body: string; sent: string }[];
}

/** Sends each body to the target on the gateway app, `concurrency` at a time, tallying statuses. */
export async function fuzz(
  app: FastifyInstance,
  token: string,
  target: FuzzTarget,
  bodies: Record<string, unknown>[],
  concurrency = 8,
): Promise<FuzzResult> {
  const result: FuzzResult = { statuses: new Map(), byKind: new Map(), bad: [] };
  const headers =
    target.api === 'messages'
      ? { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' }
      : { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  for (let i = 0; i < bodies.length; i += concurrency) {
    await Promise.all(
      bodies.slice(i, i + concurrency).map(async (body) => {
        const payload = JSON.stringify(body);
        const res = await app.inject({ method: 'POST', url: `/r/${token}${target.path}`, headers, payload });
        result.statuses.set(res.statusCode, (result.statuses.get(res.statusCode) ?? 0) + 1);
        const streamed = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
        const kind = `${streamed ? 'stream' : 'whole'} ${res.statusCode}`;
        result.byKind.set(kind, (result.byKind.get(kind) ?? 0) + 1);
        if (
          (res.statusCode >= 500 ||
            (res.statusCode >= 400 && !inOwnShape(target.api, res.body)) ||
            (streamed && STREAM_ERROR.test(res.body))) &&
          result.bad.length < 5
        )
          result.bad.push({ status: res.statusCode, body: res.body.slice(0, 500), sent: payload.slice(0, 500) });
      }),
    );
  }
  return result;
}

// An error reported inside a 200 stream (the gateway failing after the headers went out).
const STREAM_ERROR = /^event: (error|response\.failed)$/m;

function inOwnShape(api: FuzzTarget['api'], text: string): boolean {
  try {
    const j = JSON.parse(text) as { type?: unknown; error?: { message?: unknown; type?: unknown; param?: unknown } };
    if (api === 'messages') return j.type === 'error' && typeof j.error?.message === 'string';
    return typeof j.error?.message === 'string' && typeof j.error.type === 'string' && 'param' in j.error;
  } catch {
    return false;
  }
}
