import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { parseRunConfig } from '../../src/config/run.js';
import { root, startPipelineStack, tinyRunConfig, type PipelineStack } from '../pipeline/harness.js';

const run = promisify(execFile);

// A real tiny run (real agents, gateway, SmolLM2, trainer), then `volt report` as a process after the worker is gone.
describe('volt report on a real finished run', { timeout: 1_500_000 }, () => {
  let stack: PipelineStack;
  before(async () => {
    stack = await startPipelineStack();
    await stack.startGateway();
  });
  after(async () => stack?.stop());

  it('shows the real transcript, scores and checkpoint of the run', async () => {
    const worker = await stack.startWorker('all');
    const config = parseRunConfig(tinyRunConfig('report-e2e'));
    const { client, close } = await connectClient(stack.env);
    let status;
    try {
      status = await (await startTrainingRun(client, config)).handle.result();
    } finally {
      await close();
    }
    worker.kill('SIGKILL');

    const { stdout } = await run(process.execPath, [path.join(root, 'bin/volt.mjs'), 'report', 'report-e2e'], { cwd: root, env: { ...process.env, ...stack.vars } });
    const dir = path.join(stack.env.dataDir, 'reports', 'report-e2e');
    assert.deepEqual(stdout.trim().split('\n'), [path.join(dir, 'index.html'), path.join(dir, 'curve.png')]);
    assert.equal((await readFile(path.join(dir, 'curve.png'))).subarray(1, 4).toString(), 'PNG');
    const html = await readFile(path.join(dir, 'index.html'), 'utf8');
    assert.match(html, /<th>state<\/th><td>COMPLETED<\/td>/);
    assert.match(html, /<th>total rollouts<\/th><td>4<\/td>/);
    assert.match(html, /points<\/td>/);
    const it0 = status.history[0]!;
    if (it0.promoted) assert.ok(html.includes(it0.candidate!.sha256!), 'the promoted checkpoint is named by its sha256');
    // The calculator agent's real system prompt and the model's real answers, with who served them.
    assert.match(html, /<div class="msg system"><b>system<\/b><pre>[^<]+/);
    assert.match(html, /served by smollm2-135m-instruct/);
    assert.match(html, /finish (stop|length)/);
  });
});
