import { connectClient } from '../../client/connect.js';
import { createSchedule, readRunConfig } from '../../client/runs.js';
import { UsageError, type Command } from '../command.js';

export const scheduleCommand: Command = {
  name: 'schedule',
  summary: 'nightly retraining with Temporal Schedules: create | trigger | delete | list',
  help: [
    'usage: volt schedule create --id nightly --cron "0 2 * * *" --config run.json',
    '       volt schedule trigger --id nightly      (start one run now)',
    '       volt schedule delete --id nightly',
    '       volt schedule list',
    'Each scheduled start is a trainingRun whose run id is "<id>-<start time>", so nightly runs never share storage.',
    'Temporal CLI equivalent: temporal schedule create --schedule-id nightly --cron "0 2 * * *" --workflow-id nightly',
    '  --type trainingRun --task-queue volt-cpu --input-file run.json',
  ].join('\n'),
  options: { id: { type: 'string' }, cron: { type: 'string' }, config: { type: 'string' } },
  async run(ctx) {
    const action = ctx.positionals[0];
    const id = typeof ctx.values.id === 'string' ? ctx.values.id : undefined;
    if (action !== 'list' && !id) throw new UsageError('--id is required');
    const { client, close } = await connectClient(ctx.env());
    try {
      if (action === 'create') {
        if (typeof ctx.values.cron !== 'string' || typeof ctx.values.config !== 'string') throw new UsageError('create needs --cron and --config');
        const config = await readRunConfig(ctx.values.config);
        await createSchedule(client, id!, ctx.values.cron, config);
        ctx.out(`schedule ${id} created: ${ctx.values.cron} → trainingRun (${config.iterations} iterations)`);
      } else if (action === 'trigger') {
        await client.schedule.getHandle(id!).trigger();
        ctx.out(`schedule ${id} triggered`);
      } else if (action === 'delete') {
        await client.schedule.getHandle(id!).delete();
        ctx.out(`schedule ${id} deleted`);
      } else if (action === 'list') {
        for await (const s of client.schedule.list()) ctx.out(`${s.scheduleId}  ${s.state.paused ? 'paused' : 'active'}  next: ${s.info.nextActionTimes[0]?.toISOString() ?? '-'}`);
      } else throw new UsageError(`unknown schedule action ${JSON.stringify(action)}`);
      return 0;
    } finally {
      await close();
    }
  },
};
