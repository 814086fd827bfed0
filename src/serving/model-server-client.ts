import { request } from 'undici';

/** The model server answered a control call with an error status (the body's start says why). */
export class ModelServerError extends Error {
  constructor(
    readonly call: string,
    readonly status: number,
    body: string,
  ) {
    super(`model server ${call}: ${status} ${body.slice(0, 300)}`);
    this.name = 'ModelServerError';
  }
}

/** The error type an adapter loader answers a load with when the checkpoint is not in the store (HTTP 404). */
export const CHECKPOINT_NOT_FOUND = 'checkpoint_not_found';

/** The one client of the model server (Volt's Python server or vLLM): its base URL, admin key and protocol. */
export interface ModelServerClient {
  /** The base URL, without a trailing slash. */
  readonly url: string;
  /** Serve the adapter in `dir` as `name` (vLLM's load_lora_adapter, in place, so it is idempotent). */
  loadAdapter(name: string, dir: string): Promise<void>;
  /** Stop serving adapter `name` (vLLM's unload_lora_adapter); one that is not loaded is already unloaded. */
  unloadAdapter(name: string): Promise<void>;
  /** The ids the server serves now (the base model and every loaded adapter), from /v1/models. */
  listModels(signal?: AbortSignal): Promise<string[]>;
  /** Whether /v1/models answers (the server is up and has its base model). */
  ready(signal?: AbortSignal): Promise<boolean>;
}

export function createModelServerClient(opts: { url: string; adminKey: string }): ModelServerClient {
  const url = opts.url.replace(/\/+$/, '');
  const authorization = `Bearer ${opts.adminKey}`;
  // Every control call goes through here, so none can leave out the admin key (agents never have it).
  const control = async (call: string, body: object, ok: (status: number) => boolean): Promise<void> => {
    const res = await request(`${url}/v1/${call}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    if (!ok(res.statusCode)) throw new ModelServerError(call, res.statusCode, text);
  };
  const models = async (signal?: AbortSignal) => {
    // vLLM with --api-key guards /v1/models too (that key is the admin key on a cluster); Volt's server ignores it.
    const res = await request(`${url}/v1/models`, { signal, headers: { authorization } });
    if (res.statusCode >= 300) throw new ModelServerError('models', res.statusCode, await res.body.text());
    return ((await res.body.json()) as { data: { id: string }[] }).data.map((m) => m.id);
  };
  return {
    url,
    loadAdapter: (name, dir) =>
      control('load_lora_adapter', { lora_name: name, lora_path: dir, load_inplace: true }, (s) => s < 300),
    unloadAdapter: (name) => control('unload_lora_adapter', { lora_name: name }, (s) => s < 300 || s === 404),
    listModels: models,
    ready: (signal) =>
      models(signal).then(
        () => true,
        () => false,
      ),
  };
}
