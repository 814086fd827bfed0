import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../../src/client/connect.js';
import { rolloutOutcomeRecordSchema } from '../../src/contracts/rollout-outcome.js';
import { loadEnv } from '../../src/config/env.js';
import { parseRunConfig, type RunConfigInput } from '../../src/config/run.js';
import type { LiveGroupRecord } from '../../src/rollouts/live-groups.js';
import { freePort } from '../../src/stack/ports.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { CPU_QUEUE } from '../../src/workflows/proxies.js';
import type { EvalResult } from '../../src/workflows/types.js';
import { alive, killHard, until } from '../helpers/processes.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const root = path.resolve(import.meta.dirname, '../..');

// Real Temporal, S3, gateway and worker processes; the worker is SIGKILLed while its agent (and the agent's child)
// run. The agents it left behind must be killed and their gateway token closed by the restarted worker.
describe('abandoned attempts are cleaned up', { timeout: 600_000 }, () => {
  let services: TestServices;
  let vars: Record<string, string>;
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-abandoned-'));
  const agent = path.join(dir, 'agent.mjs');
  // The first attempt hangs with a child in its group; a later attempt answers at once.
  writeFileSync(
    agent,
    [
      "import { spawn } from 'node:child_process';",
      "import { existsSync, writeFileSync } from 'node:fs';",
      `const marker = ${JSON.stringify(path.join(dir, 'hung.json'))};`,
      "if (existsSync(marker)) { writeFileSync(process.env.VOLT_OUTPUT_FILE, '1'); process.exit(0); }",
      "const child = spawn('sleep', ['1000'], { stdio: 'ignore' });",
      'writeFileSync(marker, JSON.stringify({ agent: process.pid, child: child.pid, token: process.env.OPENAI_API_KEY }));',
      'setInterval(() => {}, 1000);',
    ].join('\n'),
  );
  const startWorker = async () => {
    const child = spawn(process.execPath, [path.join(root, 'bin/volt.mjs'), 'worker', '--queue', 'all'], {
      cwd: root,
      env: { ...process.env, ...vars },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let ready = false;
    child.stdout!.on('data', (d: Buffer) => (ready ||= d.toString().includes('volt worker polling')));
    await until('the worker', () => ready, 120_000);
    return child;
  };
  const tokenStatus = async (token: string) => {
    const r = await fetch(`${vars.VOLT_GATEWAY_URL}/admin/rollouts/${token}`, {
      headers: { authorization: `Bearer ${vars.VOLT_GATEWAY_ADMIN_KEY}` },
    });
    return ((await r.json()) as { status: string }).status;
  };

  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    const port = await freePort('127.0.0.1');
    vars = {
      ...services.env,
      VOLT_GATEWAY_URL: `http://127.0.0.1:${port}`,
      VOLT_GATEWAY_ADMIN_KEY: 'abandoned-test-admin-key',
      VOLT_MODEL_SERVER_URL: 'http://127.0.0.1:9',
    };
    const gateway = spawn(process.execPath, [path.join(root, 'bin/volt.mjs'), 'gateway'], {
      cwd: root,
      env: { ...process.env, ...vars },
      stdio: 'ignore',
    });
    children.push(gateway);
    await until('the gateway', () =>
      fetch(`${vars.VOLT_GATEWAY_URL}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
    );
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (existsSync(path.join(dir, 'hung.json'))) {
      const { agent: a, child } = JSON.parse(readFileSync(path.join(dir, 'hung.json'), 'utf8')) as {
        agent: number;
        child: number;
      };
      for (const pid of [a, child]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    await services?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a restarted worker kills the agent group a SIGKILLed worker left running and closes its token', async () => {
    writeFileSync(
      path.join(dir, 'tasks.jsonl'),
      `${JSON.stringify({ id: 't0', input: {}, reference: { answer: 1 } })}\n`,
    );
    const config = parseRunConfig({
      runId: 'abandoned',
      agent: { command: [process.execPath, agent], envAllowList: ['PATH'], timeoutSec: 300 },
      tasks: { trainFile: path.join(dir, 'tasks.jsonl'), evalFile: path.join(dir, 'tasks.jsonl') },
      reward: { kind: 'numeric_match' },
      eval: { tasks: 1 },
      timeouts: { heartbeatSec: 5, rolloutsSec: 600, updateSec: 600 },
      // Unsandboxed: the agent lives in this test's temp dir, and the orphaned process group is what is under test
      // (a sandboxed attempt is reaped by its own PID namespace).
      rollouts: { sandbox: 'none' },
    } as RunConfigInput);
    let worker = await startWorker();
    const { client, close } = await connectClient(loadEnv(vars, root));
    try {
      const policy = { name: 'smollm2-135m-instruct', checkpointKey: null, sha256: null, iteration: null };
      const handle = await client.workflow.start('evaluation', {
        taskQueue: CPU_QUEUE,
        workflowId: 'abandoned-eval',
        args: [{ config, iteration: 0, label: 'base', policy }],
      });
      await until('the first attempt to hang', () => existsSync(path.join(dir, 'hung.json')));
      const hung = JSON.parse(readFileSync(path.join(dir, 'hung.json'), 'utf8')) as {
        agent: number;
        child: number;
        token: string;
      };
      const live = readdirSync(path.join(services.dataDir, 'live-agents')).map(
        (f) => JSON.parse(readFileSync(path.join(services.dataDir, 'live-agents', f), 'utf8')) as LiveGroupRecord,
      );
      assert.deepEqual(
        live.map((r) => [r.token, r.pgid]),
        [[hung.token, hung.agent]],
        'the running attempt is recorded with its group',
      );
      assert.equal(await tokenStatus(hung.token), 'open');

      await killHard(worker, 'worker');
      await sleep(500);
      // The kill landed mid-work: the agent and its child outlived their worker.
      assert.ok(alive(hung.agent) && alive(hung.child), 'the agent group survived the worker (detached)');

      worker = await startWorker();
      await until('the orphaned group to be killed', () => !alive(hung.agent) && !alive(hung.child), 60_000);
      await until('the abandoned token to be closed', async () => (await tokenStatus(hung.token)) === 'closed', 60_000);

      const result = (await handle.result()) as EvalResult;
      assert.deepEqual([result.scored, result.tasks, result.score], [1, 1, 1]);
      const record = await createObjectStore(loadEnv(vars, root)).getJson(
        keys.rolloutOutcome('abandoned', 0, 'eval-base-0'),
        rolloutOutcomeRecordSchema,
      );
      assert.ok(record.final.ref.attempt >= 1, 'the cut-off attempt ran again as a new attempt');
      assert.deepEqual(
        readdirSync(path.join(services.dataDir, 'live-agents')),
        [],
        'no attempt is left recorded as live',
      );
    } finally {
      await close();
    }
  });
});
