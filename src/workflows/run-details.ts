import { setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { DASHBOARD_MEMO } from './definitions.js';

/** The run's page on the dashboard whose base URL the run was started with (memo DASHBOARD_MEMO), as Markdown. */
export function dashboardLink(runId: string): string | null {
  const base = workflowInfo().memo?.[DASHBOARD_MEMO];
  if (typeof base !== 'string' || !/^https?:\/\//.test(base)) return null;
  return `[Volt dashboard: run ${runId}](${base.replace(/\/+$/, '')}/runs/${encodeURIComponent(runId)})`;
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
