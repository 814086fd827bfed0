import { bestAliasName, loadAdapter } from '../../activities/serving.js';
import { keys } from '../../storage/keys.js';
import { createObjectStore } from '../../storage/object-store.js';
import { UsageError, type Command } from '../command.js';
import { modelAliasSchema, type ModelAlias } from '../../contracts/policy.js';

export const rollbackCommand: Command = {
  name: 'rollback',
  summary: "move a run's promoted checkpoint (alias `best`) back to the previous one and reload it in the model server",
  help: 'usage: volt rollback <runId>\nThe alias history lives in the object store (runs/<runId>/aliases/best.json); each rollback steps back one promotion.',
  options: {},
  async run(ctx) {
    const runId = ctx.positionals[0];
    if (!runId) throw new UsageError('missing the run id');
    const env = ctx.env();
    const store = createObjectStore(env);
    const key = keys.modelAlias(runId, 'best');
    const alias = await store.getJsonOrNull(key, modelAliasSchema);
    const previous = alias?.history.at(-1);
    if (!alias || !previous) {
      ctx.err(`run ${runId} has no earlier promotion to roll back to`);
      return 1;
    }
    const rolled: ModelAlias = { ...alias, current: previous, history: alias.history.slice(0, -1) };
    await loadAdapter({ env, store, modelServerUrl: env.VOLT_MODEL_SERVER_URL }, previous.policy, bestAliasName(runId));
    await store.putJson(key, rolled, modelAliasSchema);
    ctx.out(`${bestAliasName(runId)} now serves ${previous.policy.name} (iteration ${previous.iteration}, score ${previous.score.toFixed(3)})`);
    return 0;
  },
};
