import assert from 'node:assert/strict';
import { access, chmod, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalRunner } from '../../src/rollouts/local-runner.js';
import { findPidsCgroupRoot } from '../../src/rollouts/pids-cgroup.js';
import { SandboxUnavailableError } from '../../src/rollouts/sandbox-probe.js';
import { rolloutInput, startGateway, type RunningGateway } from '../gateway/harness.js';
import { agent, specFor, startLogStore, tempDir } from './fixtures.js';

const LIMIT = 64;

/**
 * The situation where RLIMIT_NPROC does not bind: a root worker whose runner root sits under a 0700 directory, so
 * its agents cannot run as nobody and run as uid 0 on the host (docs/sandbox.md). A real bubblewrap sandbox and a
 * real fork bomb: rollouts.limits.processes holds through a per-attempt pids cgroup, or the run is refused.
 */
void describe(
  'rollouts.limits.processes for a root worker that cannot drop agents to nobody',
  { skip: process.getuid?.() === 0 ? false : 'needs a root worker' },
  () => {
    let s3: Awaited<ReturnType<typeof startLogStore>>;
    let closed: string;
    let gateway: RunningGateway;
    const spec = (rolloutId: string) =>
      specFor([process.execPath, agent('fork-count.mjs')], {
        ref: { runId: 'run-1', iteration: 0, rolloutId, attempt: 0 },
        taskInput: { forkAttempts: 200 },
        limits: { processes: LIMIT },
        timeoutMs: 60_000,
      });

    before(async () => {
      s3 = await startLogStore();
      closed = await tempDir('closed');
      await chmod(closed, 0o700);
      // A real gateway; its upstream is never called (the agent below only lists models, which the gateway answers).
      gateway = await startGateway(s3.store, closed, 'http://127.0.0.1:9');
    });
    after(async () => {
      await gateway?.close();
      await s3.stop();
      await rm(closed, { recursive: true, force: true });
    });

    void it('contains a fork bomb at the limit (pids cgroup), or refuses the run when no cgroup can be had', async (t) => {
      const runner = new LocalRunner({ root: path.join(closed, 'rollouts'), logs: s3.sink });
      const cgroups = await findPidsCgroupRoot();
      try {
        if (cgroups.dir === null) {
          await assert.rejects(runner.run(spec('bomb'), new AbortController().signal), SandboxUnavailableError);
          return;
        }
        const result = await runner.run(spec('bomb'), new AbortController().signal);
        assert.equal(result.outcome, 'succeeded', result.detail ?? '');
        const report = JSON.parse(result.outputText ?? '{}') as { children: number; error: string | null };
        t.diagnostic(`pids cgroup under ${cgroups.dir}: ${report.children} children, then ${report.error}`);
        assert.equal(report.error, 'EAGAIN', `the fork bomb got ${report.children} children and no EAGAIN`);
        assert.ok(report.children < LIMIT, `${report.children} children under a limit of ${LIMIT}`);
      } finally {
        await runner.close();
      }
    });

    void it('an agent holding every process it may have still reaches its gateway on new connections (socat keeps pids of its own)', async (t) => {
      const cgroups = await findPidsCgroupRoot();
      if (cgroups.dir === null) return t.skip(`no writable pids cgroup: ${cgroups.reason}`);
      const reg = await gateway.admin.register(rolloutInput({ runId: 'run-1', iteration: 0, rolloutId: 'hold' }));
      const runner = new LocalRunner({
        root: path.join(closed, 'rollouts-hold'),
        logs: s3.sink,
        hide: [gateway.dataDir],
      });
      try {
        const result = await runner.run(
          specFor([process.execPath, agent('fork-hold-call.mjs')], {
            ref: { runId: 'run-1', iteration: 0, rolloutId: 'hold', attempt: 0 },
            gateway: { baseUrl: reg.baseUrl, token: reg.token },
            taskInput: { forkAttempts: 200 },
            limits: { processes: LIMIT },
            timeoutMs: 90_000,
          }),
          new AbortController().signal,
        );
        assert.equal(result.outcome, 'succeeded', result.detail ?? '');
        const report = JSON.parse(result.outputText ?? '{}') as {
          before: unknown;
          children: number;
          error: string | null;
          calls: unknown[];
        };
        t.diagnostic(
          `held ${report.children} children (then ${report.error}); calls before: ${String(report.before)}, while holding: ${report.calls.join(', ')}`,
        );
        assert.equal(report.before, 200, 'the gateway answered before the agent took its processes');
        // The agent really held its whole share: its next fork failed.
        assert.equal(report.error, 'EAGAIN', `the agent got ${report.children} children and no EAGAIN`);
        assert.deepEqual(
          report.calls,
          [200, 200, 200],
          'every new gateway connection made while the agent held its processes was answered',
        );
      } finally {
        await runner.close();
        await gateway.admin.close(reg.token);
      }
    });

    void it('without a pids cgroup refuses the attempt with a typed error naming the reason and the fix, and creates nothing', async () => {
      const root = path.join(closed, 'refused');
      const runner = new LocalRunner({ root, logs: s3.sink, pidsCgroup: null });
      try {
        await assert.rejects(runner.run(spec('refused'), new AbortController().signal), (e: Error) => {
          assert.ok(e instanceof SandboxUnavailableError, String(e));
          assert.match(e.message, /rollouts\.limits\.processes/);
          assert.match(e.message, /not traversable by others/);
          assert.match(e.message, /chmod o\+x/);
          return true;
        });
        await assert.rejects(access(path.join(root, 'run-1', '000000', 'refused')), { code: 'ENOENT' });
      } finally {
        await runner.close();
      }
    });
  },
);
