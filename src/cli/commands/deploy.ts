import { listDeployAliases } from '../../lineage/deploy-alias.js';
import { servingDeps } from '../../serving/serve-policy.js';
import { syncDeployAliases } from '../../serving/promotion.js';
import { createObjectStore } from '../../storage/object-store.js';
import { UsageError, type Command } from '../command.js';

export const deployCommand: Command = {
  name: 'deploy',
  summary: "deploy aliases (a lineage's stable serving name): list | restore-aliases into a model server",
  help: [
    'usage: volt deploy list',
    '       volt deploy restore-aliases [--model-server URL]   (default VOLT_MODEL_SERVER_CONTROL_URL, else VOLT_MODEL_SERVER_URL)',
    "Promotion and rollback move a lineage's deploy alias (deploy-aliases/<alias>.json) and load it into the model",
    'server; a model server that restarts forgets it. `volt serve` restores every stored alias when it starts; a server',
    'started any other way (python -m volt_trainer.serve, vLLM) needs `volt deploy restore-aliases` once it answers',
    '(e.g. a Kubernetes postStart hook or a readiness-gated Job). It downloads each current adapter into',
    'VOLT_DATA_DIR/adapters/<sha256> and asks the server to load that path (load_lora_adapter, in place: idempotent),',
    'so the server must read that directory at the same path. Claimed aliases with nothing promoted yet are skipped.',
  ].join('\n'),
  options: { 'model-server': { type: 'string' } },
  async run(ctx) {
    const action = ctx.positionals[0];
    const env = ctx.env();
    const store = createObjectStore(env);
    if (action === 'list') {
      for (const a of await listDeployAliases(store)) {
        const served = a.current
          ? `${a.current.policy.name} (${a.current.policy.sha256?.slice(0, 12) ?? 'base'}, run ${a.current.runId})`
          : 'nothing promoted yet';
        ctx.out(`${a.alias}  lineage ${a.lineage}  → ${served}`);
      }
      return 0;
    }
    if (action !== 'restore-aliases')
      throw new UsageError(`unknown deploy action ${JSON.stringify(action)} (expected list or restore-aliases)`);
    const deps = servingDeps(
      env,
      store,
      typeof ctx.values['model-server'] === 'string' ? ctx.values['model-server'] : undefined,
    );
    const url = deps.server.url;
    const loaded = await syncDeployAliases(deps);
    ctx.out(
      loaded.length
        ? `deploy aliases served by ${url}: ${loaded.join(', ')}`
        : 'no deploy aliases with a promoted policy stored',
    );
    return 0;
  },
};
