import { DefaultLogger, Runtime } from '@temporalio/worker';
import { sandboxProblem } from '../../rollouts/sandbox-probe.js';
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
    // The cpu queue runs rollouts: say now, not at the first rollout, when local ones cannot run here.
    const problem = queues.includes('cpu') ? await sandboxProblem(process.getuid?.() === 0) : null;
    if (problem)
      ctx.err(
        `volt worker: warning: runs with rollouts.runner "local" (the default) and rollouts.sandbox "bubblewrap" will fail their rollouts on this worker; those with rollouts.runner "kubernetes" are unaffected. ${problem}`,
      );
    await workers.run();
    return 0;
  },
};
