import { spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { servingDeps } from '../../serving/serve-policy.js';
import { syncDeployAliases } from '../../serving/promotion.js';
import { createObjectStore } from '../../storage/object-store.js';
import type { VoltEnv } from '../../config/env.js';
import type { Command, CommandContext } from '../command.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the model server (SmolLM2-135M on CPU by default) on VOLT_MODEL_SERVER_URL',
  help: [
    'Runs `python -m volt_trainer.serve` from VOLT_PYTHON: OpenAI-compatible, vLLM token-id/logprob extensions, LoRA',
    'adapters. Once it answers, every deploy alias stored in the object store (deploy-aliases/, moved by promotion and',
    'rollback) is loaded, so `model: "<alias>"` serves its lineage\'s current policy again after a restart (--no-aliases: skip).',
    'At scale point VOLT_MODEL_SERVER_URL at vLLM instead (>= 0.10.2, with --enable-lora).',
  ].join('\n'),
  options: {
    model: { type: 'string', default: 'smollm2-135m-instruct' },
    'max-batch': { type: 'string', default: '64' },
    'no-aliases': { type: 'boolean', default: false },
  },
  async run(ctx) {
    const env = ctx.env();
    const url = new URL(env.VOLT_MODEL_SERVER_URL);
    const args = [
      '-m',
      'volt_trainer.serve',
      '--model',
      String(ctx.values.model),
      '--host',
      url.hostname,
      '--port',
      url.port || '80',
      '--data-dir',
      env.modelCacheDir,
      '--max-batch',
      String(ctx.values['max-batch']),
    ];
    const child = spawn(path.resolve(env.VOLT_PYTHON), args, {
      stdio: 'inherit',
      env: { ...process.env, HF_HUB_OFFLINE: '1', VOLT_MODEL_SERVER_ADMIN_KEY: env.VOLT_MODEL_SERVER_ADMIN_KEY },
    });
    for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => child.kill(sig));
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
    if (!ctx.values['no-aliases'])
      void restoreAliases(env, ctx, () => child.exitCode !== null || child.signalCode !== null);
    return exited;
  },
};

/** Wait until the server answers, then load the stored deploy aliases; a failure is printed, the server keeps running. */
async function restoreAliases(env: Readonly<VoltEnv>, ctx: CommandContext, gone: () => boolean): Promise<void> {
  // This process starts the server itself: its control calls go to it, not to VOLT_MODEL_SERVER_CONTROL_URL.
  const deps = servingDeps(env, createObjectStore(env), env.VOLT_MODEL_SERVER_URL);
  while (!gone() && !(await deps.server.ready())) await sleep(250);
  if (gone()) return;
  try {
    const loaded = await syncDeployAliases(deps);
    ctx.out(loaded.length ? `deploy aliases served: ${loaded.join(', ')}` : 'no deploy aliases stored');
  } catch (err) {
    ctx.err(`volt serve: could not restore deploy aliases: ${(err as Error).message}`);
  }
}
