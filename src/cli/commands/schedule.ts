import { readFile } from 'node:fs/promises';
import { connectClient } from '../../client/connect.js';
import { createSchedule, readRunConfig, triggerSchedule } from '../../client/runs.js';
import { assertDeployAliasFree, DeployAliasError } from '../../lineage/deploy-alias.js';
import { createObjectStore } from '../../storage/object-store.js';
import { UsageError, type Command } from '../command.js';
import { parseDuration } from '../duration.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export const scheduleCommand: Command = {
  name: 'schedule',
  summary: 'nightly retraining with Temporal Schedules: create | trigger | pause | unpause | delete | list',
  help: [
    'usage: volt schedule create --lineage calculator --cron "0 2 * * *" --config run.json [--catchup "1 day"] [--id ID]',
    '       volt schedule trigger --id calculator   (start one run now, unless one is running: overlap SKIP)',
    '       volt schedule pause --id calculator [--note why] | unpause --id calculator',
    '       volt schedule delete --id calculator',
    '       volt schedule list',
    'The schedule id defaults to the lineage name. Each start is a trainingRun with run id "<lineage>-<start time>" that',
    "starts from the lineage's current policy, takes the tasks added since the previous night (tasks.trainPrefix) and",
    'must beat that policy to replace it. Overlap policy SKIP: never two nights of one lineage at once; after downtime the',
    'missed start within --catchup (the schedule\'s catchupWindow: "36h", "1 day", "90 minutes"; default 1 day) runs once;',
    'a start missed by longer is dropped (`temporal schedule backfill` runs it). Without --lineage, every start begins',
    'from the base model. A config whose deploy.alias another lineage serves is refused (exit 2), no schedule made.',
    'Temporal CLI equivalent (with "lineage" set in run.json): temporal schedule create --schedule-id calculator',
    '  --cron "0 2 * * *" --overlap-policy Skip --catchup-window 24h --workflow-id calculator --type trainingRun',
    '  --task-queue volt-cpu --input-file run.json',
  ].join('\n'),
  options: {
    id: { type: 'string' },
    lineage: { type: 'string' },
    cron: { type: 'string' },
    config: { type: 'string' },
    catchup: { type: 'string' },
    note: { type: 'string' },
  },
  async run(ctx) {
    const action = ctx.positionals[0];
    const lineage = str(ctx.values.lineage);
    const id = str(ctx.values.id) ?? lineage;
    if (action !== 'list' && !id) throw new UsageError('--id (or --lineage) is required');
    let config;
    let catchupMs = 0;
    if (action === 'create') {
      const cron = str(ctx.values.cron);
      const file = str(ctx.values.config);
      if (!cron || !file) throw new UsageError('create needs --cron and --config');
      catchupMs = parseDuration('--catchup', str(ctx.values.catchup) ?? '1 day');
      const raw = JSON.parse(
        await readFile(file, 'utf8').catch((err: Error) => {
          throw new UsageError(`--config ${file}: ${err.message}`);
        }),
      ) as { lineage?: unknown };
      if (lineage && raw.lineage !== undefined && raw.lineage !== lineage)
        throw new UsageError(`--lineage ${lineage} differs from the config's lineage ${String(raw.lineage)}`);
      // Validated with the lineage in, so its cross-field rules (deploy.alias needs a lineage) see it.
      config = await readRunConfig(file, lineage ? { lineage } : {});
      // Every night would fail at its start on an alias another lineage serves: refused now, before the schedule exists.
      if (config.deploy && config.lineage) {
        await assertDeployAliasFree(createObjectStore(ctx.env()), config.deploy.alias, config.lineage).catch(
          (err: Error) => {
            throw err instanceof DeployAliasError ? new UsageError(err.message) : err;
          },
        );
      }
    }
    const { client, close } = await connectClient(ctx.env());
    try {
      if (action === 'create') {
        await createSchedule(client, id!, str(ctx.values.cron)!, config!, {
          catchupWindowMs: catchupMs,
          dashboardUrl: ctx.env().VOLT_DASHBOARD_URL,
        });
        const what = config!.lineage
          ? `lineage ${config!.lineage}${config!.deploy ? `, served as ${config!.deploy.alias}` : ''}`
          : 'from the base model each time';
        ctx.out(
          `schedule ${id} created: ${str(ctx.values.cron)} → trainingRun (${config!.iterations} iterations, ${what}), overlap SKIP, catch-up ${catchupMs / 1000} s`,
        );
      } else if (action === 'trigger') {
        await triggerSchedule(client, id!);
        ctx.out(`schedule ${id} triggered (skipped if a run of it is still running)`);
      } else if (action === 'pause' || action === 'unpause') {
        const handle = client.schedule.getHandle(id!);
        await (action === 'pause' ? handle.pause(str(ctx.values.note)) : handle.unpause(str(ctx.values.note)));
        ctx.out(`schedule ${id} ${action}d`);
      } else if (action === 'delete') {
        await client.schedule.getHandle(id!).delete();
        ctx.out(`schedule ${id} deleted`);
      } else if (action === 'list') {
        for await (const s of client.schedule.list())
          ctx.out(
            `${s.scheduleId}  ${s.state.paused ? 'paused' : 'active'}  next: ${s.info.nextActionTimes[0]?.toISOString() ?? '-'}`,
          );
      } else throw new UsageError(`unknown schedule action ${JSON.stringify(action)}`);
      return 0;
    } finally {
      await close();
    }
  },
};
