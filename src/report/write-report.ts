import { execFile } from 'node:child_process';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { curveData, type CurveData } from './curve-data.js';
import { CURVE_FILE, headlineLines, renderReportHtml } from './render-html.js';
import type { ReportData } from './report-data.js';

const run = promisify(execFile);
const PLOT_SCRIPT = path.resolve(import.meta.dirname, '../../scripts/plot_curve.py');

export interface WrittenReport {
  html: string;
  png: string;
  curveJson: string;
  /** The summary's first lines as plain text (`volt report` prints them). */
  headline: string[];
}

/** Write curve.json and draw curve.png from it with matplotlib (also used by the prompt-optimisation report). */
export async function plotCurve(
  curve: CurveData,
  out: Pick<WrittenReport, 'png' | 'curveJson'>,
  python: string,
): Promise<void> {
  await writeFile(out.curveJson, JSON.stringify(curve, null, 2));
  try {
    await run(python, [PLOT_SCRIPT, out.curveJson, out.png], { timeout: 120_000 });
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`plotting ${out.png} with ${python} failed: ${(e.stderr || e.message).trim().slice(-1000)}`, {
      cause: err,
    });
  }
}

/** Write index.html, curve.json and curve.png (drawn by matplotlib from curve.json) into `dir`. */
export async function writeReport(data: ReportData, dir: string, python: string): Promise<WrittenReport> {
  await mkdir(dir, { recursive: true });
  const out = {
    html: path.join(dir, 'index.html'),
    png: path.join(dir, CURVE_FILE),
    curveJson: path.join(dir, 'curve.json'),
  };
  await plotCurve(curveData(data), out, python);
  // Written last and atomically, so an index.html on disk always has its curve next to it.
  await writeFile(`${out.html}.part`, renderReportHtml(data));
  await rename(`${out.html}.part`, out.html);
  return { ...out, headline: headlineLines(data) };
}
