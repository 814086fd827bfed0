import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Command } from '../command.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the model server (SmolLM2-135M on CPU by default) on VOLT_MODEL_SERVER_URL',
  help: 'Runs `python -m volt_trainer.serve` from VOLT_PYTHON: OpenAI-compatible, vLLM token-id/logprob extensions, LoRA\nadapters. At scale point VOLT_MODEL_SERVER_URL at vLLM instead (>= 0.10.2, with --enable-lora).',
  options: { model: { type: 'string', default: 'smollm2-135m-instruct' }, 'max-batch': { type: 'string', default: '8' } },
  async run(ctx) {
    const env = ctx.env();
    const url = new URL(env.VOLT_MODEL_SERVER_URL);
    const args = ['-m', 'volt_trainer.serve', '--model', String(ctx.values.model), '--host', url.hostname, '--port', url.port || '80',
      '--data-dir', env.modelCacheDir, '--max-batch', String(ctx.values['max-batch'])];
    const child = spawn(path.resolve(env.VOLT_PYTHON), args, { stdio: 'inherit', env: { ...process.env, HF_HUB_OFFLINE: '1', VOLT_MODEL_SERVER_ADMIN_KEY: env.VOLT_MODEL_SERVER_ADMIN_KEY } });
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => child.kill(sig));
    return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  },
};
