import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { connectClient } from '../../src/client/connect.js';
import { loadEnv } from '../../src/config/env.js';
import { claimDeployAlias } from '../../src/lineage/deploy-alias.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';
import { ROOT, voltInProcess } from './volt-cli.js';

// A real Temporal dev server: what `volt schedule` creates is read back from Temporal itself (describe), not from the CLI.
void describe('volt schedule: catch-up window and pause on a real Temporal Schedule', { timeout: 600_000 }, () => {
  let services: TestServices;
  let client: Client;
  let close: () => Promise<void>;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-schedule-'));
  const config = path.join(dir, 'run.json');
  const cli = (...args: string[]) => voltInProcess(['schedule', ...args], services.env);
  before(async () => {
    services = await startTestServices({ temporal: true, s3: true });
    ({ client, close } = await connectClient(loadEnv(services.env, ROOT)));
    writeFileSync(
      config,
      JSON.stringify({
        runId: 'unused',
        agent: { command: ['true'] },
        reward: { kind: 'numeric_match' },
        tasks: { trainPrefix: 'task-sources/calc/', evalFile: path.join(ROOT, 'examples/calculator/tasks/eval.jsonl') },
      }),
    );
  });
  after(async () => {
    await close?.();
    await services?.stop();
  });

  void it("--catchup becomes the schedule's catchupWindow (default 1 day); a bad duration is a usage error that creates nothing", async () => {
    const created = await cli(
      'create',
      '--lineage',
      'calc-36h',
      '--cron',
      '0 2 * * *',
      '--config',
      config,
      '--catchup',
      '36h',
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /schedule calc-36h created: .*overlap SKIP, catch-up 129600 s/);
    const d = await client.schedule.getHandle('calc-36h').describe();
    assert.deepEqual([d.policies.catchupWindow, d.policies.overlap], [36 * 3_600_000, 'SKIP']);

    assert.equal(
      (
        await cli(
          'create',
          '--lineage',
          'calc-words',
          '--cron',
          '0 2 * * *',
          '--config',
          config,
          '--catchup',
          '90 minutes',
        )
      ).code,
      0,
    );
    assert.equal((await client.schedule.getHandle('calc-words').describe()).policies.catchupWindow, 90 * 60_000);
    assert.equal((await cli('create', '--lineage', 'calc-default', '--cron', '0 2 * * *', '--config', config)).code, 0);
    assert.equal((await client.schedule.getHandle('calc-default').describe()).policies.catchupWindow, 86_400_000);

    const bad = await cli(
      'create',
      '--lineage',
      'calc-bad',
      '--cron',
      '0 2 * * *',
      '--config',
      config,
      '--catchup',
      'soon',
    );
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--catchup: expected a duration such as "36h", "1 day" or "90 minutes", got "soon"/);
    await assert.rejects(client.schedule.getHandle('calc-bad').describe(), ScheduleNotFoundError);
  });

  void it('a deploy alias that another lineage serves is refused at create, and no schedule is made', async () => {
    const store = createObjectStore(loadEnv(services.env, ROOT));
    await claimDeployAlias(store, 'calc-prod', 'calc-other');
    const withAlias = path.join(dir, 'run-alias.json');
    writeFileSync(
      withAlias,
      JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), deploy: { alias: 'calc-prod' } }),
    );
    const refused = await cli('create', '--lineage', 'calc-mine', '--cron', '0 2 * * *', '--config', withAlias);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /deploy\.alias: calc-prod already serves lineage calc-other/);
    await assert.rejects(client.schedule.getHandle('calc-mine').describe(), ScheduleNotFoundError);
    // The owner's own schedule is fine.
    const owner = await cli('create', '--lineage', 'calc-other', '--cron', '0 2 * * *', '--config', withAlias);
    assert.equal(owner.code, 0, owner.stderr);
    assert.match(owner.stdout, /served as calc-prod/);
  });

  void it("pause and unpause change the schedule's state in Temporal, with the note", async () => {
    assert.equal((await cli('pause', '--id', 'calc-36h', '--note', 'eval set rework')).code, 0);
    const paused = await client.schedule.getHandle('calc-36h').describe();
    assert.deepEqual([paused.state.paused, paused.state.note], [true, 'eval set rework']);
    assert.match((await cli('list')).stdout, /calc-36h {2}paused/);
    assert.equal((await cli('unpause', '--id', 'calc-36h')).code, 0);
    assert.equal((await client.schedule.getHandle('calc-36h').describe()).state.paused, false);
    assert.equal((await cli('delete', '--id', 'calc-36h')).code, 0);
    await assert.rejects(client.schedule.getHandle('calc-36h').describe(), ScheduleNotFoundError);
  });
});
