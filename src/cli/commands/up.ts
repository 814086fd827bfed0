import { upStack } from '../../stack/local-stack.js';
import { parseServiceList, SERVICES, type ServiceName } from '../../stack/stack-services.js';
import { UsageError, type Command, type CommandContext } from '../command.js';

/** `--only a,b` of up and status, as service names; a bad list is a usage error. */
export function onlyServices(ctx: CommandContext): ServiceName[] | undefined {
  const value = ctx.values.only;
  if (typeof value !== 'string') return undefined;
  try {
    return parseServiceList(value);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export const upCommand: Command = {
  name: 'up',
  summary: 'start the local stack (Temporal + Web UI, S3, model server, gateway, worker) in the background',
  help: [
    'Starts, in this order and each once the one before is ready, what is not already running, detached from this shell:',
    `${SERVICES.join(', ')}. --only temporal,s3 starts just those (when the rest runs elsewhere).`,
    'Data: $VOLT_DATA_DIR/temporal/volt.db and $VOLT_DATA_DIR/s3/; logs: $VOLT_DATA_DIR/logs/; pids: $VOLT_DATA_DIR/run/.',
    'Addresses come from VOLT_TEMPORAL_ADDRESS, VOLT_TEMPORAL_UI_PORT, VOLT_S3_ENDPOINT, VOLT_MODEL_SERVER_URL and VOLT_GATEWAY_URL.',
    'The model server dequantises SmolLM2 into $VOLT_MODEL_CACHE_DIR on its first start (~20 s; later ~3 s).',
  ].join('\n'),
  options: { json: { type: 'boolean', default: false }, only: { type: 'string' } },
  async run(ctx) {
    const env = ctx.env();
    const only = onlyServices(ctx);
    const json = ctx.values.json === true;
    const notes: Record<string, string> = {
      temporal: `(namespace ${env.VOLT_TEMPORAL_NAMESPACE})`,
      s3: `(bucket ${env.VOLT_S3_BUCKET})`,
      'model-server': `(cache ${env.modelCacheDir})`,
    };
    const services = await upStack(env, only, (s) => {
      if (!json)
        ctx.out(
          `${s.name.padEnd(13)} ${s.action?.padEnd(16)} pid ${String(s.pid).padEnd(8)} ${s.address}  ${notes[s.name] ?? ''}`.trimEnd(),
        );
    });
    if (json) ctx.out(JSON.stringify(services));
    else {
      const ui = services.find((s) => s.uiUrl)?.uiUrl;
      if (ui) ctx.out(`\nTemporal Web  ${ui}`);
    }
    return 0;
  },
};
