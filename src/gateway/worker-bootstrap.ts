import { Worker } from 'node:worker_threads';

/**
 * Starts one of the gateway's worker threads (`name`: its module beside this one, without extension), unref'd so it
 * never keeps the process alive. Only --cpu-prof* is passed on (bench/gateway-profile.ts profiles the threads too).
 */
export function startGatewayWorker(name: string): Worker {
  const worker = new Worker(bootstrap(name), { eval: true, execArgv: process.execArgv.filter((a) => a.startsWith('--cpu-prof')) });
  worker.unref();
  return worker;
}

// Run from TypeScript sources (tsx), the worker registers tsx itself: a worker does not inherit hooks from register().
function bootstrap(name: string): string {
  const here = import.meta.url;
  const ts = here.endsWith('.ts');
  const entry = new URL(`./${name}${ts ? '.ts' : '.js'}`, here).href;
  if (!ts) return `import(${JSON.stringify(entry)});`;
  return `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
}
