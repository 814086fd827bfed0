import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../../src/client/connect.js';
import { startTrainingRun } from '../../src/client/runs.js';
import { parseRunConfig } from '../../src/config/run.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import type { RunStatus } from '../../src/workflows/types.js';
import { root, startPipelineStack, tinyRunConfig, type PipelineStack } from './harness.js';
import { dirManifestSchema, modelAliasSchema } from '../../src/contracts/policy.js';
import { rewardsFileSchema } from '../../src/contracts/rewards.js';

const run = promisify(execFile);

// One real iteration end to end: real Temporal, S3, model server, gateway, worker processes and agent processes.
describe('trainingRun end to end (tiny settings), then its report', { timeout: 1_500_000 }, () => {
  let stack: PipelineStack;
  let worker: ChildProcess;
  before(async () => {
    stack = await startPipelineStack();
    await stack.startGateway();
    worker = await stack.startWorker('all');
  });
  after(async () => stack?.stop());

  it('produces a real adapter, evaluates it, and promotes it only if eval says so', async () => {
    const config = parseRunConfig(tinyRunConfig('e2e-run'));
    const { client, close } = await connectClient(stack.env);
    try {
      const { handle } = await startTrainingRun(client, config);
      const status: RunStatus = await handle.result();
      assert.equal(status.phase, 'done');
      assert.equal(status.history.length, 1);
      const it0 = status.history[0]!;
      assert.equal(it0.rollouts, 4);
      assert.ok(it0.samples > 0, 'the batch has samples');
      assert.ok(it0.candidate?.sha256, 'the update produced a content-addressed adapter');
      assert.notEqual(it0.candidate!.name, config.model.base);
      assert.equal(typeof it0.evalScore, 'number', 'the candidate was evaluated');

      const store = createObjectStore(stack.env);
      const manifest = await store.getJson(keys.checkpointManifest(it0.candidate!.sha256!), dirManifestSchema);
      assert.ok(manifest.files.some((f) => f.path.endsWith('adapter_model.safetensors')));

      // Promotion followed the eval result: promoted exactly when the candidate beat the base's held-out score.
      const baseEval = await store.getJson(keys.evaluation('e2e-run', 0, 'base'), rewardsFileSchema);
      assert.equal(it0.promoted, it0.evalScore! > baseEval.meanReward + config.eval.promoteMargin);
      const alias = await store.getJsonOrNull(keys.modelAlias('e2e-run', 'best'), modelAliasSchema);
      assert.equal(alias?.current.policy.sha256 ?? null, it0.promoted ? it0.candidate!.sha256 : null);
      assert.equal(status.best?.policy.sha256 ?? null, it0.promoted ? it0.candidate!.sha256 : null);
      await fetch(`${stack.modelUrl}/v1/load_lora_adapter`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${stack.env.VOLT_MODEL_SERVER_ADMIN_KEY}`,
        },
        body: JSON.stringify({
          lora_name: 'e2e-candidate',
          lora_path: `${stack.env.dataDir}/adapters/${it0.candidate!.sha256}`,
          load_inplace: true,
        }),
      }).then((r) => assert.equal(r.status, 200));

      // The trained adapter is served and differs from the base model in what it says.
      const ask = async (model: string) => {
        const r = await fetch(`${stack.modelUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model,
            messages: [{ role: 'user', content: 'What is 17 times 3?' }],
            max_tokens: 24,
            temperature: 0,
            logprobs: true,
          }),
        });
        assert.equal(r.status, 200, await r.clone().text());
        return (await r.json()) as {
          choices: { logprobs: { content: { logprob: number }[] } }[];
          system_fingerprint: string;
        };
      };
      const base = await ask(config.model.base);
      const best = await ask('e2e-candidate');
      assert.match(best.system_fingerprint, /^e2e-candidate@/);
      const lp = (x: typeof base) => x.choices[0]!.logprobs.content.map((c) => c.logprob);
      assert.notDeepEqual(lp(best), lp(base), 'the trained adapter changes what the model computes');
    } finally {
      await close();
    }

    // The report is built from Temporal and the object store alone, after the worker is gone.
    worker.kill('SIGKILL');
    const { stdout } = await run(process.execPath, [path.join(root, 'bin/volt.mjs'), 'report', 'e2e-run'], {
      cwd: root,
      env: { ...process.env, ...stack.vars },
    });
    const dir = path.join(stack.env.dataDir, 'reports', 'e2e-run');
    const printed = stdout.trim().split('\n');
    // the headline (held-out base → best, per task kind), then the two paths
    assert.match(printed[0]!, /^held-out score, base → best: /);
    assert.deepEqual(printed.slice(-2), [path.join(dir, 'index.html'), path.join(dir, 'curve.png')]);
    assert.equal((await readFile(path.join(dir, 'curve.png'))).subarray(1, 4).toString(), 'PNG');
    const html = await readFile(path.join(dir, 'index.html'), 'utf8');
    assert.match(html, /<th>state<\/th><td>COMPLETED<\/td>/);
    assert.match(html, /<th>total rollouts<\/th><td>4<\/td>/);
    // The calculator agent's real system prompt and the model's real answers, with who served them.
    assert.match(html, /<div class="msg system"><b>system<\/b><pre>[^<]+/);
    assert.match(html, /served by smollm2-135m-instruct/);
    assert.match(html, /finish (stop|length)/);
  });
});
