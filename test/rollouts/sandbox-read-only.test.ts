import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runConfigSchema } from '../../src/config/run.js';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { SandboxUnavailableError } from '../../src/rollouts/sandbox-probe.js';
import { specFor, startLogStore, tempDir } from './fixtures.js';

/**
 * agent.readOnlyPaths in a real bubblewrap sandbox: an agent kept where the sandbox hides things (/tmp) cannot be
 * loaded until the run names its directory; a directory inside what agents never see is refused, naming it.
 */
void describe('agent.readOnlyPaths', () => {
  let s3: Awaited<ReturnType<typeof startLogStore>>;
  let agentDir: string;
  let root: string;
  let runner: LocalRunner;

  before(async () => {
    s3 = await startLogStore();
    agentDir = await tempDir('agent-code');
    await mkdir(path.join(agentDir, 'lib'));
    await writeFile(
      path.join(agentDir, 'lib', 'answer.mjs'),
      'export const answer = "from the agent\'s own module";\n',
    );
    await writeFile(
      path.join(agentDir, 'agent.mjs'),
      "import { answer } from './lib/answer.mjs';\nprocess.stdout.write(answer);\n",
    );
    root = await tempDir('read-only-rollouts');
    runner = new LocalRunner({ root, logs: s3.sink });
  });
  after(async () => {
    await runner.close();
    await s3.stop();
    await rm(agentDir, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  });

  const spec = (rolloutId: string, readOnly?: string[]) =>
    specFor([process.execPath, path.join(agentDir, 'agent.mjs')], {
      ref: { runId: 'run-1', iteration: 0, rolloutId, attempt: 0 },
      agent: { command: [process.execPath, path.join(agentDir, 'agent.mjs')], ...(readOnly && { readOnly }) },
    });

  void it('an agent under /tmp is hidden by the sandbox unless the run names its directory', async () => {
    const hidden = await runner.run(spec('hidden'), new AbortController().signal);
    assert.equal(hidden.outcome, 'agent_failed', 'without the path the agent cannot be loaded');
    const named = await runner.run(spec('named', [agentDir]), new AbortController().signal);
    assert.equal(named.outcome, 'succeeded', named.detail ?? '');
    const stdout = (await s3.read(named.stdoutKey)).toString();
    assert.match(stdout, /from the agent's own module/);
  });

  void it('the agent can read the named directory but not write to it', async () => {
    const writer = path.join(agentDir, 'writer.mjs');
    await writeFile(
      writer,
      "import { writeFileSync } from 'node:fs';\ntry { writeFileSync(new URL('./planted.txt', import.meta.url), 'x'); process.stdout.write('wrote'); } catch (e) { process.stdout.write(e.code); }\n",
    );
    const r = await runner.run(
      specFor([process.execPath, writer], {
        ref: { runId: 'run-1', iteration: 0, rolloutId: 'writer', attempt: 0 },
        agent: { command: [process.execPath, writer], readOnly: [agentDir] },
      }),
      new AbortController().signal,
    );
    assert.equal(r.outcome, 'succeeded', r.detail ?? '');
    assert.match((await s3.read(r.stdoutKey)).toString(), /^(EROFS|EACCES)$/);
  });

  void it("refuses a path inside the runner's root (other attempts' workdirs), naming it", async () => {
    const inside = path.join(root, 'run-1');
    await assert.rejects(
      runner.run(spec('inside-root', [inside]), new AbortController().signal),
      (err: Error) => err instanceof SandboxUnavailableError && err.message.includes(`${inside} is inside ${root}`),
    );
  });

  void it('the run config validates the paths, naming the field', () => {
    const base = {
      runId: 'ro',
      agent: { command: ['node', 'a.mjs'] },
      tasks: { trainFile: 'x.jsonl', evalFile: 'y.jsonl' },
      reward: { kind: 'numeric_match', source: 'output_file' },
    };
    for (const [bad, message] of [
      ['relative/dir', /absolute/],
      ['/opt/../home/me', /"\.\."/],
      ['/', /root/],
    ] as const) {
      const parsed = runConfigSchema.safeParse({ ...base, agent: { ...base.agent, readOnlyPaths: [bad] } });
      assert.equal(parsed.success, false, bad);
      const issue = parsed.error!.issues[0]!;
      assert.deepEqual(issue.path, ['agent', 'readOnlyPaths', 0]);
      assert.match(issue.message, message);
    }
    const ok = runConfigSchema.safeParse({ ...base, agent: { ...base.agent, readOnlyPaths: ['/opt/agents'] } });
    assert.equal(ok.success, true, JSON.stringify(ok.error?.issues));
  });
});
