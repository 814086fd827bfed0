import { buildAdapterLoader } from '../../serving/adapter-loader.js';
import { createObjectStore } from '../../storage/object-store.js';
import type { Command } from '../command.js';

export const adapterLoaderCommand: Command = {
  name: 'adapter-loader',
  summary: "the model server's control front on a cluster: fetches adapters from the object store before each load",
  help: [
    'usage: volt adapter-loader --upstream URL --dir DIR [--host 0.0.0.0] [--port 8001]',
    'Runs beside the model server (vLLM) in its pod. Workers with VOLT_ADAPTER_SOURCE=store and',
    'VOLT_MODEL_SERVER_CONTROL_URL pointing here send load_lora_adapter with lora_path s3://<VOLT_S3_BUCKET>/checkpoints/<sha256>/;',
    'the loader downloads that checkpoint (VOLT_S3_*; verified against its manifest) into DIR/<sha256>, a volume the',
    'model server mounts at the same path, and forwards the call to --upstream with that path. unload_lora_adapter and',
    '/v1/models pass through. Every call needs Authorization: Bearer VOLT_MODEL_SERVER_ADMIN_KEY, which is also sent',
    "upstream (vLLM's --api-key). A checkpoint missing from the store answers 404 (the worker fails the run, no retry).",
  ].join('\n'),
  options: {
    upstream: { type: 'string' },
    dir: { type: 'string' },
    host: { type: 'string', default: '0.0.0.0' },
    port: { type: 'string', default: '8001' },
  },
  async run(ctx) {
    const env = ctx.env();
    const { upstream, dir } = ctx.values;
    if (typeof upstream !== 'string' || typeof dir !== 'string') {
      ctx.err('volt adapter-loader: --upstream and --dir are required');
      return 2;
    }
    const store = createObjectStore(env);
    const app = await buildAdapterLoader({
      upstream,
      dir,
      store,
      bucket: env.VOLT_S3_BUCKET,
      adminKey: env.VOLT_MODEL_SERVER_ADMIN_KEY,
    });
    const address = await app.listen({ host: String(ctx.values.host), port: Number(ctx.values.port) });
    ctx.out(`adapter loader on ${address} → ${upstream}, checkpoints of s3://${env.VOLT_S3_BUCKET} into ${dir}`);
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void app.close());
    await new Promise<void>((resolve) => app.server.once('close', () => resolve()));
    return 0;
  },
};
