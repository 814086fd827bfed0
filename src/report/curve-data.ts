import type { ReportData } from './report-data.js';

/** The only input of scripts/plot_curve.py: ready-to-plot series, so Python computes nothing. */
export interface CurveData {
  title: string;
  /** x = updates applied before: iteration i's rollouts sample the policy after i updates. */
  iterations: number[];
  meanReward: number[];
  /** Evaluated policies by updates applied; the base model is 0 when known. */
  evalIterations: number[];
  evalScores: number[];
  baseScore: number | null;
  /** Series and x-axis names when they are not a training run's (keys: reward, eval, base, x). */
  labels?: { reward: string; eval: string; base: string; x: string };
}

/** The x axis counts updates applied: base eval and iteration 0's rewards at 0, iteration i's eval (after its update) at i + 1. */
export function curveData(data: Pick<ReportData, 'runId' | 'status' | 'baseScore'>): CurveData {
  const history = data.status.history;
  const evaluated = history.filter((h) => h.evalScore !== null);
  const base = data.baseScore === null ? [] : [{ x: 0, y: data.baseScore }];
  const evals = [...base, ...evaluated.map((h) => ({ x: h.iteration + 1, y: h.evalScore! }))];
  return {
    title: `run ${data.runId}`,
    iterations: history.map((h) => h.iteration),
    meanReward: history.map((h) => h.meanReward),
    evalIterations: evals.map((e) => e.x),
    evalScores: evals.map((e) => e.y),
    baseScore: data.baseScore,
  };
}
