import { createObjectStore } from '../../storage/object-store.js';
import { taskPrefixSchema } from '../../config/run.js';
import { parseFrozen } from '../../config/errors.js';
import { addTaskFile } from '../../lineage/task-intake.js';
import { readTaskSet } from '../../tasks/task-set.js';
import { UsageError, type Command } from '../command.js';

export const tasksCommand: Command = {
  name: 'tasks',
  summary: 'add a task file (JSON Lines) to an object-store task source (tasks.trainPrefix)',
  help: [
    'usage: volt tasks add <tasks.jsonl> --prefix task-sources/calculator/',
    'Validates every task (errors name the line and field), refuses ids the source already has, and uploads the file as',
    '<prefix><UTC time>-<hash>.jsonl. The next run of a lineage with tasks.trainPrefix = <prefix> trains on it (plus',
    'tasks.replayShare older tasks per new one); a run with no new file ends at once with "no new tasks".',
  ].join('\n'),
  options: { prefix: { type: 'string' } },
  async run(ctx) {
    const [action, file] = ctx.positionals;
    if (action !== 'add') throw new UsageError(`unknown tasks action ${JSON.stringify(action)} (expected add)`);
    if (!file) throw new UsageError('missing the task file');
    if (typeof ctx.values.prefix !== 'string')
      throw new UsageError("--prefix is required (the run config's tasks.trainPrefix)");
    const prefix = parseFrozen(taskPrefixSchema, ctx.values.prefix, '--prefix');
    const tasks = await readTaskSet(file);
    const store = createObjectStore(ctx.env());
    await store.ensureBucket();
    const key = await addTaskFile(store, prefix, tasks);
    ctx.out(`added ${tasks.length} tasks as ${key}`);
    return 0;
  },
};
