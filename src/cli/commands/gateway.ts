import { runGateway } from '../../gateway/server.js';
import type { Command } from '../command.js';

export const gatewayCommand: Command = {
  name: 'gateway',
  summary: 'run the recording gateway on VOLT_GATEWAY_URL (agents point OPENAI_BASE_URL at it)',
  help: 'Listens on VOLT_GATEWAY_LISTEN_HOST (default 127.0.0.1; 0.0.0.0 in a pod, so its Service reaches it) at the port of\nVOLT_GATEWAY_URL (the address agents and workers are given).\nForwards /r/<token>/v1/... to VOLT_MODEL_SERVER_URL, records one span per call (WAL, then S3), serves the admin API\n(bearer VOLT_GATEWAY_ADMIN_KEY), /healthz and /metrics. Stops gracefully on SIGTERM.\nDurability: VOLT_GATEWAY_WAL_SYNC=write (default) answers once the span is written to the WAL (survives kill -9; fdatasync\nfollows within VOLT_GATEWAY_WAL_SYNC_INTERVAL_MS, default 100, so an OS crash can lose that window); =fsync answers after\nfdatasync (survives an OS crash, slower).',
  options: {},
  async run(ctx) {
    const app = await runGateway(ctx.env());
    await new Promise<void>((resolve) => app.server.once('close', () => resolve()));
    return 0;
  },
};
