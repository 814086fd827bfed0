/** Escape text for HTML element content and double-quoted attributes. */
export function escapeHtml(value: unknown): string {
  return String(value)
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** A table; every cell is escaped here, so callers pass raw values. */
export function table(head: string[], rows: unknown[][], cls = ''): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const tr = rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('\n');
  return `<table${cls ? ` class="${escapeHtml(cls)}"` : ''}><thead><tr>${th}</tr></thead><tbody>\n${tr}\n</tbody></table>`;
}

export const fmt = (n: number | null | undefined, digits = 3) =>
  n === null || n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits);

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${m}m ${s % 60}s` : m ? `${m}m ${s % 60}s` : `${s}s`;
}

export const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; }
th, td { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; vertical-align: top; }
table.numbers td { text-align: right; font-variant-numeric: tabular-nums; }
.msg { border-left: 4px solid #999; margin: .4rem 0; padding: .3rem .6rem; background: #f7f7f7; }
.msg.user { border-color: #3b7dd8; } .msg.system { border-color: #888; } .msg.tool { border-color: #b58900; }
.msg.assistant { border-color: #2a9d55; background: #eef8f1; }
.msg pre { white-space: pre-wrap; word-break: break-word; margin: .2rem 0 0; font: 13px/1.4 ui-monospace, monospace; }
.meta { color: #666; font-size: 12px; }
.error { color: #b00020; }
`;
