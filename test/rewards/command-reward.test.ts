import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { prepareReward, scoreRollout } from '../../src/rewards/registry.js';
import { rewardSpecSchema } from '../../src/rewards/spec.js';
import { RewardInfraError } from '../../src/rewards/types.js';
import { ctx, makeEvidence } from './make-evidence.js';

const task = { id: 't1', input: {}, reference: { answer: 42 } };
let root: string;

/** A fresh workdir with a small test suite: each tests/*.sh passes when it exits 0; run.sh counts them. */
async function workdir(name: string): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(path.join(dir, 'tests'), { recursive: true });
  await writeFile(path.join(dir, 'tests', 'a.sh'), 'test "$(cat answer.txt)" = 42\n');
  await writeFile(path.join(dir, 'tests', 'b.sh'), 'test -s answer.txt\n');
  await writeFile(
    path.join(dir, 'run.sh'),
    'touch ran.marker; p=0; t=0; for f in tests/*.sh; do t=$((t+1)); sh "$f" && p=$((p+1)); done; echo "$p passed, $t total"; test $p = $t\n',
  );
  return dir;
}

const suite = {
  kind: 'command',
  command: ['sh', 'run.sh'],
  passPattern: '(?<passed>\\d+) passed, (?<total>\\d+) total',
  protectedFiles: ['tests/**', 'run.sh'],
  tamperPenalty: -1,
};

void describe('command reward', () => {
  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'volt-command-reward-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  void it('scores exit code 0 as 1 and anything else as 0', async () => {
    const dir = await workdir('exit');
    const spec = rewardSpecSchema.parse({ kind: 'command', command: ['sh', '-c', 'test "$(cat answer.txt)" = 42'] });
    await writeFile(path.join(dir, 'answer.txt'), '42');
    assert.deepEqual(await scoreRollout(spec, task, makeEvidence({ workdir: dir }), ctx), {
      value: 1,
      parts: { command: 1 },
      flags: [],
    });
    await writeFile(path.join(dir, 'answer.txt'), '41');
    assert.deepEqual(await scoreRollout(spec, task, makeEvidence({ workdir: dir }), ctx), {
      value: 0,
      parts: { command: 0 },
      flags: ['exit_code:1'],
    });
  });

  void it('runs the check without the operator environment, HOME set to the workdir', async () => {
    const dir = await workdir('env');
    process.env.VOLT_TEST_OPERATOR_SECRET = 'do-not-leak';
    try {
      const spec = rewardSpecSchema.parse({
        kind: 'command',
        command: ['sh', '-c', `test -z "$VOLT_TEST_OPERATOR_SECRET" && test "$HOME" = "$(pwd)"`],
      });
      assert.equal((await scoreRollout(spec, task, makeEvidence({ workdir: dir }), ctx)).value, 1);
    } finally {
      delete process.env.VOLT_TEST_OPERATOR_SECRET;
    }
  });

  void it('scores the parsed pass count as a fraction', async () => {
    const dir = await workdir('fraction');
    const spec = rewardSpecSchema.parse(suite);
    const snapshots = await prepareReward(spec, dir);
    await writeFile(path.join(dir, 'answer.txt'), '41');
    const r = await scoreRollout(spec, task, makeEvidence({ workdir: dir, snapshots }), ctx);
    assert.deepEqual(r, { value: 0.5, parts: { command: 0.5 }, flags: ['exit_code:1'] });
  });

  void it('kills a check that runs past its timeout, with its children', async () => {
    const dir = await workdir('timeout');
    const spec = rewardSpecSchema.parse({
      kind: 'command',
      command: ['sh', '-c', 'sleep 30 & sleep 30'],
      timeoutMs: 300,
    });
    const t0 = Date.now();
    const r = await scoreRollout(spec, task, makeEvidence({ workdir: dir }), ctx);
    assert.deepEqual(r, { value: 0, parts: { command: 0 }, flags: ['check_timed_out'] });
    assert.ok(Date.now() - t0 < 5_000, 'returned soon after the timeout');
  });

  void it('catches an agent that rewrites a protected test, and does not run the check', async () => {
    const dir = await workdir('tamper');
    const spec = rewardSpecSchema.parse(suite);
    const snapshots = await prepareReward(spec, dir);
    assert.deepEqual(Object.keys(snapshots.command!.files), ['run.sh', 'tests/a.sh', 'tests/b.sh']);
    // The agent "fixes" the failing test instead of the answer.
    await writeFile(path.join(dir, 'answer.txt'), '41');
    await writeFile(path.join(dir, 'tests', 'a.sh'), 'exit 0\n');
    const r = await scoreRollout(spec, task, makeEvidence({ workdir: dir, snapshots }), ctx);
    assert.deepEqual(r, { value: -1, parts: { command: -1 }, flags: ['tampered:tests/a.sh'] });
    assert.equal(existsSync(path.join(dir, 'ran.marker')), false, 'the tampered check never ran');
  });

  void it('catches deleted and newly added protected files', async () => {
    const dir = await workdir('add-delete');
    const spec = rewardSpecSchema.parse(suite);
    const snapshots = await prepareReward(spec, dir);
    await unlink(path.join(dir, 'tests', 'b.sh'));
    await writeFile(path.join(dir, 'tests', 'c.sh'), 'exit 0\n');
    const r = await scoreRollout(spec, task, makeEvidence({ workdir: dir, snapshots }), ctx);
    assert.deepEqual(r.flags, ['tampered:tests/b.sh', 'tampered:tests/c.sh']);
  });

  void it('a tampered part decides a weighted_sum: a right answer does not buy it back', async () => {
    const dir = await workdir('weighted');
    const spec = rewardSpecSchema.parse({
      kind: 'weighted_sum',
      parts: { answer: { kind: 'numeric_match' }, tests: suite },
    });
    const snapshots = await prepareReward(spec, dir);
    assert.deepEqual(Object.keys(snapshots), ['tests']);
    await writeFile(path.join(dir, 'answer.txt'), '42');
    await writeFile(path.join(dir, 'run.sh'), 'echo "9 passed, 9 total"\n');
    const r = await scoreRollout(spec, task, makeEvidence({ workdir: dir, snapshots, outputText: '42' }), ctx);
    assert.equal(r.value, -1);
    assert.deepEqual(r.flags, ['tampered:run.sh']);
  });

  void it('infra problems are RewardInfraError: no snapshot taken, command missing', async () => {
    const dir = await workdir('infra');
    await assert.rejects(
      scoreRollout(rewardSpecSchema.parse(suite), task, makeEvidence({ workdir: dir }), ctx),
      RewardInfraError,
    );
    const missing = rewardSpecSchema.parse({ kind: 'command', command: ['volt-no-such-checker'] });
    await assert.rejects(
      scoreRollout(missing, task, makeEvidence({ workdir: dir }), ctx),
      /cannot start "volt-no-such-checker"/,
    );
  });
});
