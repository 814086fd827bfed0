import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { resolveAgentCommand } from '../../src/rollouts/agent-command.js';
import { runTaskSetup } from '../../src/rollouts/task-setup.js';
import { TaskSetError } from '../../src/contracts/task.js';
import { readTaskSet } from '../../src/tasks/task-set.js';

const root = path.resolve(import.meta.dirname, '../..');

describe('task setup and agent commands', () => {
  it('resolves repo-relative file paths in a command, leaving flags and PATH names alone', () => {
    const cmd = resolveAgentCommand(
      ['node', '--import', 'tsx', 'examples/calculator-ts/agent.ts', 'no/such/file'],
      root,
    );
    assert.deepEqual(cmd, [
      'node',
      '--import',
      'tsx',
      path.join(root, 'examples/calculator-ts/agent.ts'),
      'no/such/file',
    ]);
  });

  it("runs a SQL task's setup in a fresh workdir, so the agent finds its database", async () => {
    const tasks = await readTaskSet(path.join(root, 'examples/sql-agent/tasks/train.jsonl'));
    const task = tasks[0]!;
    assert.ok(task.setup, 'SQL tasks carry a setup command');
    const workdir = mkdtempSync(path.join(os.tmpdir(), 'volt-setup-'));
    await runTaskSetup(task, workdir, root);
    assert.ok(existsSync(path.join(workdir, 'shop.db')));
    // seed_db.py refuses to overwrite: a second setup in the same dir is a clear failure, not a silent reuse.
    await assert.rejects(runTaskSetup(task, workdir, root), /setup .* failed/);
  });

  it('rejects a task set whose setup is malformed, naming line and field', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'volt-tasks-')), 't.jsonl');
    (await import('node:fs')).writeFileSync(file, '{"id":"a","input":{},"setup":{"command":[]}}\n');
    await assert.rejects(
      readTaskSet(file),
      (e: unknown) => e instanceof TaskSetError && /t\.jsonl:1: setup\.command/.test(e.message),
    );
  });
});
