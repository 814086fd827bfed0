import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { runAgent } from './run-agent.js';
// The model is the FAKE scripted chat server (test/examples/scripted-openai-server.ts); the agents are real processes.
import { startScriptedServer, type ScriptedReply } from './scripted-openai-server.js';

const root = path.resolve(import.meta.dirname, '../..');
const python = path.join(root, '.venv/bin/python');
const agent = [python, path.join(root, 'examples/sql-agent/agent.py')];
const workdirs: string[] = [];
after(() => workdirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A fresh workdir with shop.db made the way the task set's setup command makes it. */
function seededWorkdir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'volt-sql-'));
  workdirs.push(dir);
  execFileSync(python, [path.join(root, 'examples/sql-agent/seed_db.py'), 'shop.db'], { cwd: dir });
  return dir;
}

/** Rows of a query on the workdir's shop.db, read with Python's sqlite3 (Node 20 has none built in). */
function query(dir: string, sql: string): unknown[][] {
  const script =
    'import json,sqlite3,sys; print(json.dumps(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()))';
  return JSON.parse(
    execFileSync(python, ['-c', script, path.join(dir, 'shop.db'), sql], { encoding: 'utf8' }),
  ) as unknown[][];
}

async function runSql(replies: ScriptedReply[], input: Record<string, unknown>, dir = seededWorkdir()) {
  const server = await startScriptedServer(replies);
  try {
    const run = await runAgent(
      agent,
      {
        OPENAI_BASE_URL: server.baseUrl,
        OPENAI_API_KEY: 'tok',
        VOLT_TASK: JSON.stringify({ id: 'sql-1', input }),
        VOLT_OUTPUT_FILE: path.join(dir, 'out.txt'),
      },
      dir,
    );
    return { run, dir, requests: server.requests };
  } finally {
    await server.close();
  }
}

const userAfter = (messages: { role: string; content: string }[]) => messages.at(-1)?.content ?? '';

void describe('sql agent against a scripted OpenAI server', () => {
  void it("shows the schema, runs the model's SQL on the workdir database, shows results, stops at <done>", async () => {
    const { run, dir, requests } = await runSql(
      [
        '<sql>SELECT id, status FROM orders WHERE id = 3</sql>',
        "<sql>UPDATE orders SET status = 'shipped' WHERE id = 3;</sql>",
        '<done>',
      ],
      { database: 'shop.db', instruction: 'Mark order 3 as shipped.' },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(requests.length, 3);
    const system = requests[0]!.messages[0]!.content;
    assert.match(system, /CREATE TABLE orders/);
    assert.match(system, /CREATE TABLE customers/);
    assert.equal(userAfter(requests[0]!.messages), 'Instruction: Mark order 3 as shipped.');
    assert.match(userAfter(requests[1]!.messages), /^id \| status\n3 \| \w+$/);
    assert.equal(userAfter(requests[2]!.messages), 'OK, 1 row changed.');
    assert.deepEqual(query(dir, 'SELECT status FROM orders WHERE id = 3'), [['shipped']]);
    assert.equal(
      readFileSync(path.join(dir, 'out.txt'), 'utf8'),
      "SELECT id, status FROM orders WHERE id = 3\nUPDATE orders SET status = 'shipped' WHERE id = 3;",
    );
  });

  void it('reports SQL errors to the model, refuses ATTACH, and stops after max turns', async () => {
    const { run, dir, requests } = await runSql(
      [
        '<sql>UPDATE nope SET x = 1</sql>',
        "<sql>ATTACH DATABASE 'other.db' AS other</sql>",
        '<sql>DELETE FROM orders; DELETE FROM customers;</sql>',
        'I am not sure.',
      ],
      { database: 'shop.db', instruction: 'Delete order 2.' },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(requests.length, 5);
    assert.match(userAfter(requests[1]!.messages), /^Error: no such table: nope/);
    assert.match(userAfter(requests[2]!.messages), /^Error: not authorized/);
    assert.match(userAfter(requests[3]!.messages), /^Error: .*one statement/);
    assert.match(userAfter(requests[4]!.messages), /<done>/);
    assert.equal(query(dir, 'SELECT count(*) FROM orders')[0]![0], 20);
    assert.throws(() => readFileSync(path.join(dir, 'other.db')));
  });

  void it('fails with a clear message when the database is missing or the task is malformed', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'volt-sql-empty-'));
    workdirs.push(empty);
    const missing = await runSql(['<done>'], { database: 'shop.db', instruction: 'x' }, empty);
    assert.notEqual(missing.run.code, 0);
    assert.match(missing.run.stderr, /database shop\.db does not exist/);
    const escaping = await runSql(['<done>'], { database: '../shop.db', instruction: 'x' });
    assert.match(escaping.run.stderr, /input\.database/);
    const noInstruction = await runSql(['<done>'], { database: 'shop.db' });
    assert.match(noInstruction.run.stderr, /input\.instruction/);
    assert.equal(missing.requests.length + escaping.requests.length + noInstruction.requests.length, 0);
  });
});
