import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { parseSpanKey } from '../../src/storage/spans.js';
import type { LedgerLine } from './ledger.js';

/** Where an update's trainer stands, from its work dir (src/training/train-policy.ts, trainer/volt_trainer/train.py). */
export function trainerProgress(
  dataDir: string,
  runId: string,
  iteration: number,
): { stepped: boolean; finished: boolean } {
  const out = path.join(dataDir, 'trainer', runId, String(iteration), 'out');
  // state.pt is written (atomically) after every optimizer step; adapter/ only once the last step is done.
  return { stepped: existsSync(path.join(out, 'state', 'state.pt')), finished: existsSync(path.join(out, 'adapter')) };
}

/** Agents that started and have not exited: a kill now lands mid-rollout. */
export function liveAgents(ledger: LedgerLine[]): Set<string> {
  const live = new Set<string>();
  for (const l of ledger) {
    if (l.event === 'start') live.add(l.token);
    if (l.event === 'exit') live.delete(l.token);
  }
  return live;
}

/** Requests whose stream has begun and not ended: a gateway kill now lands mid-stream. */
export function openStreams(ledger: LedgerLine[]): Set<string> {
  const open = new Set<string>();
  for (const l of ledger) {
    if (l.event === 'first_chunk') open.add(l.request!);
    if (l.event === 'answered' || l.event === 'broken') open.delete(l.request!);
  }
  return open;
}

/** Span keys in the gateway's write-ahead log (what a restart replays into S3). */
export function walSpanKeys(dataDir: string): string[] {
  const dir = path.join(dataDir, 'gateway', 'wal');
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
    for (const line of readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      try {
        const key = (JSON.parse(line) as { key?: unknown }).key;
        if (typeof key === 'string' && parseSpanKey(key)) out.push(key);
      } catch {
        // a torn last line is skipped by the gateway too
      }
    }
  }
  return out;
}

/** Whether the object store holds the span a WAL key names (alone or inside a segment). */
export async function spanStored(store: ObjectStore, walKey: string): Promise<boolean> {
  const want = parseSpanKey(walKey)!;
  for await (const { key } of store.list(want.spansPrefix)) {
    const got = parseSpanKey(key);
    if (got && got.first <= want.first && want.first <= got.last) return true;
  }
  return false;
}
