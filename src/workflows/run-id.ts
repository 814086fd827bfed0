/**
 * A run's storage id is its workflow id, made safe for object keys: a Schedule names its runs
 * `<schedule-id>-<RFC 3339 time>`, whose ':' and '+' are not key-safe.
 */
export function runIdFromWorkflowId(workflowId: string): string {
  const safe = workflowId
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .replace(/\.\.+/g, '.')
    .replace(/^[^A-Za-z0-9]+/, '');
  return safe.slice(0, 128) || 'run';
}
