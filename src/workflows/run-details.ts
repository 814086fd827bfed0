import { setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { DASHBOARD_MEMO } from './definitions.js';

/** A link to a run's dashboard page, or to the runs page (Markdown): static details at start, current details after. */
export function runDetails(dashboardUrl: string, runId?: string): string {
  const base = dashboardUrl.replace(/\/+$/, '');
  return runId
    ? `[Volt dashboard: run ${runId}](${base}/runs/${encodeURIComponent(runId)})`
    : `[Volt dashboard: runs](${base}/)`;
}

/** The run's page on the dashboard whose base URL the run was started with (memo DASHBOARD_MEMO). */
function dashboardLink(runId: string): string | null {
  const base = workflowInfo().memo?.[DASHBOARD_MEMO];
  return typeof base === 'string' && /^https?:\/\//.test(base) ? runDetails(base, runId) : null;
}

/**
 * A run's current details in Temporal Web (Markdown): what it does now, then the link to its dashboard page when it
 * was started with one. Memo is read-only here and replay-safe (the memo of the run as it started; continue-as-new
 * keeps it).
 */
export function setRunDetails(runId: string, text: string): void {
  const link = dashboardLink(runId);
  setCurrentDetails(link ? `${text}\n\n${link}` : text);
}
