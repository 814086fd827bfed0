export { trainingRun } from './training-run.js';
export { trainingIteration } from './training-iteration.js';
export { evaluation } from './evaluation.js';
export { promptOptimization } from './prompt-optimization.js';
