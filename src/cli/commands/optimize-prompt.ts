import { connectClient } from '../../client/connect.js';
import {
  apoStatusLines,
  assertApoConfig,
  followPromptOptimization,
  startPromptOptimization,
} from '../../client/prompt-optimization.js';
import { pinTaskSets, readRunConfig } from '../../client/runs.js';
import { UsageError, type Command } from '../command.js';
import { webUrl } from './train.js';

export const optimizePromptCommand: Command = {
  name: 'optimize-prompt',
  summary:
    'start automatic prompt optimisation (beam search over prompt overlays) from a run config with an `apo` section',
  help: [
    'usage: volt optimize-prompt <config.json> [--follow]',
    'Validates the config (errors name each bad field), pins its task files in the object store by content (as volt train',
    'does: workers need no task files), starts workflow promptOptimization with id = runId on task queue',
    'volt-cpu, or attaches to it when that run id was used before. Equivalent: temporal workflow start --type',
    'promptOptimization --task-queue volt-cpu --workflow-id <runId> --input-file config.json. Watch it with',
    '`volt run-status <runId>`; pause/resume/cancel work as for training. --follow prints progress until it ends.',
  ].join('\n'),
  options: { follow: { type: 'boolean', default: false } },
  async run(ctx) {
    const file = ctx.positionals[0];
    if (!file) throw new UsageError('missing the run config file');
    const raw = await readRunConfig(file);
    assertApoConfig(raw, file);
    const env = ctx.env();
    const config = await pinTaskSets(env, raw);
    const { client, close } = await connectClient(env);
    try {
      const { started } = await startPromptOptimization(client, config, { dashboardUrl: env.VOLT_DASHBOARD_URL });
      ctx.out(`${started ? 'started' : 'attached to the existing'} prompt optimisation ${config.runId}`);
      ctx.out(`Temporal Web: ${webUrl(env.VOLT_TEMPORAL_UI_PORT, env.VOLT_TEMPORAL_NAMESPACE, config.runId)}`);
      ctx.out(`Dashboard: ${env.VOLT_DASHBOARD_URL.replace(/\/+$/, '')}/runs/${encodeURIComponent(config.runId)}`);
      if (!ctx.values.follow) return 0;
      const final = await followPromptOptimization(client, config.runId, ctx.out);
      for (const line of apoStatusLines(final)) ctx.out(line);
      return 0;
    } finally {
      await close();
    }
  },
};
