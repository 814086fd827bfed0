import { policyLabel } from '../../contracts/policy-set.js';
import { connectClient } from '../../client/connect.js';
import { followRun } from '../../client/progress.js';
import { pinTaskSets, readRunConfig, startTrainingRun } from '../../client/runs.js';
import { runsGetPicked } from '../../stack/worker-polling.js';
import { CPU_QUEUE } from '../../workflows/proxies.js';
import { UsageError, type Command } from '../command.js';

export const webUrl = (uiPort: number, namespace: string, workflowId: string) =>
  `http://127.0.0.1:${uiPort}/namespaces/${namespace}/workflows/${encodeURIComponent(workflowId)}`;

export const trainCommand: Command = {
  name: 'train',
  summary: 'start a training run from a run config (JSON), or resume following it if it already runs',
  help: [
    'usage: volt train <run.json> [--follow]',
    'Validates the config (errors name each bad field), validates the task files (relative to the current directory) and',
    'pins them in the object store by content, starts workflow trainingRun with id = runId on task queue volt-cpu with',
    'the config naming the pinned sets by hash (tasks.trainSet/evalSet; workers need no task files), and prints where to',
    'watch it in Temporal Web. Equivalent: temporal workflow start --type trainingRun --task-queue volt-cpu --workflow-id',
    '<runId> --input-file run.json (then the cpu worker pins the files, so it needs them). With --follow, shows progress',
    'until the run ends (Ctrl-C stops watching only).',
  ].join('\n'),
  options: { follow: { type: 'boolean', default: false } },
  async run(ctx) {
    const file = ctx.positionals[0];
    if (!file) throw new UsageError('missing the run config file');
    const raw = await readRunConfig(file);
    const env = ctx.env();
    const config = await pinTaskSets(env, raw);
    const { client, close } = await connectClient(env);
    try {
      const { started } = await startTrainingRun(client, config, { dashboardUrl: env.VOLT_DASHBOARD_URL });
      ctx.out(`${started ? 'started' : 'attached to the existing'} run ${config.runId}`);
      ctx.out(`Temporal Web: ${webUrl(env.VOLT_TEMPORAL_UI_PORT, env.VOLT_TEMPORAL_NAMESPACE, config.runId)}`);
      ctx.out(`Dashboard: ${env.VOLT_DASHBOARD_URL.replace(/\/+$/, '')}/runs/${encodeURIComponent(config.runId)}`);
      // A run started in a namespace no worker polls waits, silently, for ever: say so while the user is here.
      if (started && !(await runsGetPicked(client.workflowService, env.VOLT_TEMPORAL_NAMESPACE)))
        ctx.err(
          `volt train: warning: no worker has polled task queue ${CPU_QUEUE} in namespace ${env.VOLT_TEMPORAL_NAMESPACE} on ${env.VOLT_TEMPORAL_ADDRESS} in the last 2 minutes, so the run waits until one does. Workers take their namespace from VOLT_TEMPORAL_NAMESPACE: set it here to theirs (deploy/README.md, "Starting runs").`,
        );
      if (!ctx.values.follow) return 0;
      const final = await followRun(
        client,
        config.runId,
        (t) => process.stdout.write(t),
        process.stdout.isTTY === true,
      );
      ctx.out(
        `run ${final.runId} done: best ${final.best ? policyLabel(final.best.policy) : '-'} with score ${final.best?.score.toFixed(3) ?? '-'}`,
      );
      return 0;
    } finally {
      await close();
    }
  },
};
