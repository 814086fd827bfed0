import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { scoreRollout } from '../../src/rewards/registry.js';
import { rewardSpecSchema } from '../../src/rewards/spec.js';
import { ctx, makeEvidence } from './make-evidence.js';

let dir: string;
/** Act as the agent: run SQL against the workdir's database with Python's sqlite3. */
const agentSql = (sql: string) =>
  execFileSync(ctx.python, [
    '-c',
    'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()',
    path.join(dir, 'shop.db'),
    sql,
  ]);

const task = {
  id: 'orders-1',
  input: { instruction: 'Mark order 2 shipped and add customer Dana' },
  reference: { expectedRows: { shipped: [[2, 'shipped']], customers: [['Ann'], ['Bob'], ['Dana']] } },
};
const spec = rewardSpecSchema.parse({
  kind: 'sqlite_state',
  database: 'shop.db',
  queries: {
    shipped: "SELECT id, status FROM orders WHERE status = 'shipped'",
    customers: 'SELECT name FROM customers',
  },
});
const score = () => scoreRollout(spec, task, makeEvidence({ workdir: dir }), ctx);

void describe('sqlite_state reward (real SQLite via Python sqlite3)', () => {
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'volt-sqlite-reward-'));
    agentSql(`CREATE TABLE orders(id INTEGER PRIMARY KEY, status TEXT); INSERT INTO orders VALUES (1,'new'),(2,'new');
              CREATE TABLE customers(name TEXT); INSERT INTO customers VALUES ('Bob'),('Ann');`);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  void it('is pass/fail on the whole state, naming the mismatches; partialCredit shapes training only', async () => {
    const shaped = rewardSpecSchema.parse({ ...spec, partialCredit: 0.5 });
    const scoreAs = (mode: 'train' | 'eval', s = spec) => {
      const evidence = makeEvidence({ workdir: dir });
      return scoreRollout(s, task, { ...evidence, result: { ...evidence.result, mode } }, ctx);
    };
    assert.deepEqual(await score(), {
      value: 0,
      parts: { sqlite_state: 0 },
      flags: ['mismatch:shipped', 'mismatch:customers'],
    });
    agentSql("UPDATE orders SET status='shipped' WHERE id=2;");
    // Half the state right is a failed task: an agent that touches nothing would match every table the task leaves alone.
    assert.deepEqual(await score(), { value: 0, parts: { sqlite_state: 0 }, flags: ['mismatch:customers'] });
    assert.deepEqual(await scoreAs('train', shaped), {
      value: 0.25,
      parts: { sqlite_state: 0, queries_matched: 0.5 },
      flags: ['mismatch:customers'],
    });
    assert.deepEqual(await scoreAs('eval', shaped), {
      value: 0,
      parts: { sqlite_state: 0 },
      flags: ['mismatch:customers'],
    });
    agentSql("INSERT INTO customers VALUES ('Dana');");
    assert.deepEqual(await score(), { value: 1, parts: { sqlite_state: 1 }, flags: [] });
    assert.deepEqual(await scoreAs('eval', shaped), { value: 1, parts: { sqlite_state: 1 }, flags: [] });
  });

  void it('compares as a list when ordered', async () => {
    const ordered = rewardSpecSchema.parse({ ...spec, ordered: true });
    const r = await scoreRollout(ordered, task, makeEvidence({ workdir: dir }), ctx);
    assert.deepEqual(r.flags, ['mismatch:customers'], 'rows come back Bob, Ann, Dana');
  });

  void it('opens the database read-only: a writing query fails and changes nothing', async () => {
    const writer = rewardSpecSchema.parse({
      kind: 'sqlite_state',
      database: 'shop.db',
      queries: { customers: 'DELETE FROM customers RETURNING name' },
    });
    const r = await scoreRollout(writer, task, makeEvidence({ workdir: dir }), ctx);
    assert.deepEqual(r.flags, ['query_failed:customers']);
    assert.equal((await score()).value, 1);
  });

  void it('a database the agent deleted scores 0, flagged; a path outside the workdir is refused', async () => {
    const gone = rewardSpecSchema.parse({ ...spec, database: 'missing.db' });
    const r = await scoreRollout(gone, task, makeEvidence({ workdir: dir }), ctx);
    assert.equal(r.value, 0);
    assert.match(r.flags[0]!, /^database_unreadable:.*unable to open database/);
    const escape = rewardSpecSchema.parse({ ...spec, database: '../other.db' });
    await assert.rejects(scoreRollout(escape, task, makeEvidence({ workdir: dir }), ctx), /escapes the workdir/);
  });
});
