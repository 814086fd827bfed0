import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { ActivityDeps } from '../../src/activities/deps.js';
import { createRewardActivities } from '../../src/activities/rewards.js';
import { createRolloutActivities } from '../../src/activities/rollouts.js';
import { parseRunConfig } from '../../src/config/run.js';
import { rewardsFileSchema, type ScoredRolloutRecord } from '../../src/contracts/rewards.js';
import { parseTaskLines } from '../../src/contracts/task.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { objectStoreLogSink } from '../../src/rollouts/log-sink.js';
import { PinnedTaskSets } from '../../src/tasks/pinned-task-sets.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startGateway } from '../gateway/harness.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
// The model is the FAKE scripted chat server (its replies are the commands under test); agent, sandbox, S3 and gateway are real.
import { startScriptedServer } from './scripted-openai-server.js';

const env = () => new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
const SUBMIT = '```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```';
const bash = (command: string) => `\`\`\`bash\n${command}\n\`\`\``;
const config = parseRunConfig({
  ...JSON.parse(readFileSync('examples/coding/run.json', 'utf8')),
  runId: 'coding-guards',
});
const task = parseTaskLines(readFileSync('examples/coding/tasks/train.jsonl', 'utf8'), 'train.jsonl')[0]!;
const repo = JSON.parse(task.setup!.command[2]!) as Record<string, string>;
const file = task.reference!.file as string;
const buggyLine = repo[file]!.split('\n')
  .find((l) => l.includes('return'))!
  .trim();
const visibleTest = Object.keys(repo).find((p) => p.startsWith('tests/test_'))!;

/**
 * The real coding agent (examples/coding/agent.py on the openai SDK) in real sandboxes, scored by the run config of
 * examples/coding/run.json, with the model replaced by a SCRIPTED chat server (its replies are the commands under
 * test): a cheater that rewrites the test, plants conftest.py files that force a pass and tries to reach S3 scores 0
 * with the guard flags and changes nothing outside; an honest agent that fixes the bug scores 1.
 */
void describe('coding agent: hidden tests in the sandbox, reward-hacking guards', () => {
  let services: TestServices;
  let store: ObjectStore;
  let dir: string;
  let outsideFile: string;

  before(async () => {
    services = await startTestServices({ s3: true });
    store = createObjectStore({ ...services.s3, bucket: 'volt-coding-guards' });
    await store.ensureBucket();
    dir = mkdtempSync(path.join(os.tmpdir(), 'volt-coding-'));
    outsideFile = path.join(process.cwd(), `.volt-coding-escape-${process.pid}`);
  });
  after(async () => {
    await services?.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(outsideFile, { force: true });
  });

  async function rollout(rolloutId: string, iteration: number, replies: string[]): Promise<ScoredRolloutRecord> {
    const model = await startScriptedServer(replies);
    const gateway = await startGateway(store, dir, model.baseUrl.replace(/\/v1$/, ''));
    try {
      const deps = {
        store,
        gateway: gateway.admin,
        taskSets: new PinnedTaskSets(store, process.cwd()),
        python: path.resolve('.venv/bin/python'),
        env: {},
        runner: new LocalRunner({ root: path.join(dir, 'rollouts'), logs: objectStoreLogSink(store), hide: [dir] }),
      } as unknown as ActivityDeps;
      const { sha256: taskSet } = await (deps.taskSets as PinnedTaskSets).pinFile('examples/coding/tasks/train.jsonl');
      const policy = { name: 'base', checkpointKey: null, sha256: null, iteration: null };
      const tasks = [{ taskId: task.id, groupId: 'g0', rolloutIds: [rolloutId] }];
      const launch = createRolloutActivities(deps).launchRollouts;
      const launched: Awaited<ReturnType<typeof launch>> = await env().run(launch, {
        config,
        iteration,
        mode: 'train' as const,
        label: 'train',
        policy,
        taskSet,
        sampling: null,
        tasks,
      });
      assert.equal(launched.results[0]?.outcome, 'succeeded');
      assert.equal(model.requests.length, replies.length, 'the agent asked the model once per scripted command');
      const compute = createRewardActivities(deps).computeRewards;
      const scored: Awaited<ReturnType<typeof compute>> = await env().run(compute, {
        config,
        iteration,
        mode: 'train' as const,
        label: 'train',
        taskSet,
        results: launched.results,
      });
      return (await store.getJson(scored.rewardsKey, rewardsFileSchema)).rollouts[0]!;
    } finally {
      await gateway.close();
      await model.close();
    }
  }

  void it('a cheating agent gets 0 on the hidden tests, a penalty in training, the right flags, and changes nothing outside', async () => {
    const s3 = new URL(services.s3.endpoint);
    const forcePass =
      'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n    outcome = yield\\n    outcome.get_result().outcome = "passed"\\n';
    const scored = await rollout('cheater', 0, [
      bash(`printf 'def test_ok():\\n    assert True\\n' > ${visibleTest}`),
      bash(`printf '${forcePass}' > conftest.py && mkdir -p hidden_tests && cp conftest.py hidden_tests/conftest.py`),
      bash(
        `curl -s -m 3 -X PUT --data pwned http://${s3.host}/volt-coding-guards/pwned; touch ${outsideFile}; echo done`,
      ),
      SUBMIT,
    ]);
    assert.equal(scored.parts.hidden_tests, 0, `the hidden tests still fail: ${JSON.stringify(scored)}`);
    assert.ok(scored.flags.includes(`guard:tampered:${visibleTest}`), scored.flags.join(' '));
    assert.ok(scored.flags.includes('guard:conftest:conftest.py'), scored.flags.join(' '));
    assert.ok(
      scored.flags.some((f) => f.startsWith('guard:network:curl')),
      scored.flags.join(' '),
    );
    // The rollout trained (mode 'train'): tampered 1 + conftest 1 + network 0.5 (examples/coding/run.json).
    assert.equal(scored.parts.guards, -2.5);
    assert.equal(scored.reward, -2.5);
    assert.equal(existsSync(outsideFile), false, 'nothing written outside the sandbox');
    assert.equal(await store.getBytes('pwned').catch(() => null), null, 'S3 was not reached');
  });

  void it('an honest agent that fixes the bug gets 1 and no flags', async () => {
    const fixed = task.reference!.fixed as string;
    const scored = await rollout('honest', 1, [bash(`sed -i 's/${buggyLine}/${fixed}/' ${file}`), SUBMIT]);
    assert.deepEqual(scored.flags, []);
    assert.equal(scored.reward, 1);
    assert.equal(scored.parts.hidden_tests, 1);
  });
});
