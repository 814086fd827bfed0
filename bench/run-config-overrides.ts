/** Applies one `--set a.b.c=<JSON value>` override to a run config (a bare word is taken as a string). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function setPath(config: Record<string, any>, assignment: string): void {
  const at = assignment.indexOf('=');
  if (at < 1) throw new Error(`--set ${assignment}: expected path=value`);
  const keys = assignment.slice(0, at).split('.');
  const raw = assignment.slice(at + 1);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    value = raw;
  }
  let node = config;
  for (const key of keys.slice(0, -1)) node = node[key] ??= {};
  node[keys[keys.length - 1]!] = value;
}
