import { upStack } from '../../stack/local-stack.js';
import type { Command } from '../command.js';

export const upCommand: Command = {
  name: 'up',
  summary: 'start the local stack (Temporal dev server with Web UI, S3 server) in the background',
  help: [
    'Starts what is not already running, detached from this shell, and creates the bucket.',
    'Data: $VOLT_DATA_DIR/temporal/volt.db and $VOLT_DATA_DIR/s3/; logs: $VOLT_DATA_DIR/logs/; pids: $VOLT_DATA_DIR/run/.',
    'Ports come from VOLT_TEMPORAL_ADDRESS, VOLT_TEMPORAL_UI_PORT and VOLT_S3_ENDPOINT.',
  ].join('\n'),
  options: { json: { type: 'boolean', default: false } },
  async run(ctx) {
    const env = ctx.env();
    const services = await upStack(env);
    if (ctx.values.json) {
      ctx.out(JSON.stringify(services));
      return 0;
    }
    for (const s of services) ctx.out(`${s.name.padEnd(9)} ${s.action?.padEnd(16)} pid ${s.pid}`);
    const [temporal, s3] = services;
    ctx.out('');
    ctx.out(`Temporal gRPC    ${temporal?.address}  (namespace ${env.VOLT_TEMPORAL_NAMESPACE})`);
    ctx.out(`Temporal Web UI  ${temporal?.uiUrl}`);
    ctx.out(`S3 endpoint      ${s3?.address}  (bucket ${env.VOLT_S3_BUCKET})`);
    return 0;
  },
};
