import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createWorkers, type Queue } from '../../workers/workers.js';
import { UsageError, type Command } from '../command.js';

export const workerCommand: Command = {
  name: 'worker',
  summary: 'run Volt workers: --queue cpu (workflows, rollouts, rewards, batches), gpu (update, serving) or all',
  help: 'Polls task queues volt-cpu and/or volt-gpu on VOLT_TEMPORAL_ADDRESS until SIGINT/SIGTERM. The embedded setup runs one\nprocess with --queue all; at scale run cpu workers next to the gateway and gpu workers on GPU nodes.',
  options: { queue: { type: 'string', default: 'all' }, identity: { type: 'string' } },
  async run(ctx) {
    const queue = String(ctx.values.queue);
    const queues: Queue[] = queue === 'all' ? ['cpu', 'gpu'] : queue === 'cpu' || queue === 'gpu' ? [queue] : [];
    if (queues.length === 0) throw new UsageError(`--queue must be cpu, gpu or all, got ${JSON.stringify(queue)}`);
    Runtime.install({ logger: new DefaultLogger((process.env.VOLT_LOG_LEVEL as 'INFO' | undefined) ?? 'WARN') });
    const env = ctx.env();
    const identity = typeof ctx.values.identity === 'string' ? ctx.values.identity : undefined;
    const workers = await createWorkers(env, queues, identity ? { identity } : {});
    ctx.out(`volt worker polling ${queues.map((q) => `volt-${q}`).join(', ')} on ${env.VOLT_TEMPORAL_ADDRESS}`);
    await workers.run();
    return 0;
  },
};
