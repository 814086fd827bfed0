import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Task } from '../contracts/task.js';
import { runInWorkdir } from './run-process.js';
import type { SpecOf } from './spec.js';
import { RewardInfraError, type RewardContext, type RewardResult, type RolloutEvidence } from './types.js';

// Python's stdlib sqlite3: always present with Python 3.11; node:sqlite is absent in Node 20 and
// better-sqlite3 needs a native prebuild fetched from GitHub at install time, which this network forbids.
const QUERY_SCRIPT = `
import json, sqlite3, sys, urllib.parse
req = json.load(sys.stdin)
con = sqlite3.connect("file:" + urllib.parse.quote(req["db"]) + "?mode=ro", uri=True)
out = {}
for name, sql in req["queries"].items():
    try:
        out[name] = {"rows": [list(r) for r in con.execute(sql).fetchall()]}
    except sqlite3.Error as e:
        out[name] = {"error": str(e)}
json.dump(out, sys.stdout)
`;

type QueryOutput = Record<string, { rows?: unknown[][]; error?: string }>;

/** Canonical row order for order-free comparison. */
const sortRows = (rows: unknown[][]) => rows.map((r) => JSON.stringify(r)).sort();

/** The check: Python reading the database read-only, the queries on stdin (also run ahead in a pod's scoring step). */
export function sqliteQuery(
  spec: SpecOf<'sqlite_state'>,
  python: string,
  workdir: string,
): { argv: string[]; input: string } {
  const db = path.resolve(workdir, spec.database);
  if (!db.startsWith(path.resolve(workdir) + path.sep))
    throw new Error(`sqlite_state.database escapes the workdir: ${spec.database}`);
  // -I: isolated mode, so modules the agent planted in its workdir cannot shadow json/sqlite3.
  const interpreter = python.includes('/') ? path.resolve(python) : python;
  return { argv: [interpreter, '-I', '-c', QUERY_SCRIPT], input: JSON.stringify({ db, queries: spec.queries }) };
}

/** 1 when every query's rows match task.reference[referenceKey][name], else 0 (or training-only partial credit); the DB is opened read-only. */
export async function sqliteState(
  spec: SpecOf<'sqlite_state'>,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
): Promise<RewardResult> {
  if (evidence.workdir === null) throw new RewardInfraError('sqlite_state', 'rollout has no workdir');
  const expected = task.reference?.[spec.referenceKey] as Record<string, unknown[][]> | undefined;
  if (!expected || typeof expected !== 'object')
    throw new Error(`task ${task.id}: reference.${spec.referenceKey} is missing`);
  const { argv, input } = sqliteQuery(spec, ctx.python, evidence.workdir);
  let outcome;
  try {
    outcome = await (ctx.exec ?? runInWorkdir(evidence.workdir))(argv, {
      timeoutMs: spec.timeoutMs,
      input,
      maxBytes: 16 << 20,
    });
  } catch (e) {
    throw new RewardInfraError('sqlite_state', `cannot start ${ctx.python}: ${(e as Error).message}`, { cause: e });
  }
  const flags: string[] = [];
  if (outcome.timedOut) return { value: 0, parts: { sqlite_state: 0 }, flags: ['query_timed_out'] };
  if (outcome.exitCode !== 0) {
    // The agent may have deleted or corrupted the database: its failure, scored 0 and flagged.
    return {
      value: 0,
      parts: { sqlite_state: 0 },
      flags: [`database_unreadable:${outcome.stderr.trim().split('\n').pop() ?? ''}`],
    };
  }
  const got = JSON.parse(outcome.stdout) as QueryOutput;
  let matched = 0;
  const names = Object.keys(spec.queries);
  for (const name of names) {
    const want = expected[name];
    if (!Array.isArray(want))
      throw new Error(`task ${task.id}: reference.${spec.referenceKey}.${name} must be an array of rows`);
    const rows = got[name]?.rows;
    if (!rows) {
      flags.push(`query_failed:${name}`);
      continue;
    }
    const same = spec.ordered ? isDeepStrictEqual(rows, want) : isDeepStrictEqual(sortRows(rows), sortRows(want));
    if (same) matched += 1;
    else flags.push(`mismatch:${name}`);
  }
  if (matched === names.length) return { value: spec.weight, parts: { sqlite_state: 1 }, flags };
  // Tables the task never touches match for an agent that did nothing: credit for them is training shaping only.
  const credit = evidence.result.mode === 'train' ? spec.partialCredit * (matched / names.length) : 0;
  return {
    value: credit * spec.weight,
    parts: credit > 0 ? { sqlite_state: 0, queries_matched: matched / names.length } : { sqlite_state: 0 },
    flags,
  };
}
