import type { Span } from '../../src/contracts/span.js';
import type { Task } from '../../src/contracts/task.js';
import type { RolloutRef } from '../../src/contracts/rollout.js';

/** The calculator agent's own system prompt and per-question hint (examples/calculator-ts/agent.ts). */
export const CALC_SYSTEM = [
  'You solve math word problems with a calculator.',
  'To calculate, write <calc>expression</calc>, for example <calc>23*12-45</calc>, and wait for the result.',
  'When you know the final answer, write <answer>number</answer>.',
].join('\n');
const HINT = 'Use <calc>expression</calc> to calculate, then <answer>number</answer>.';
// The agent sends one worked example before the task, as the real one does.
const FEW_SHOT = [
  { role: 'user', content: `Tom has 3 bags with 5 apples each. He eats 2 apples. How many apples are left?\n${HINT}` },
  { role: 'assistant', content: '<calc>3*5-2</calc>' },
  { role: 'user', content: 'Result: 13' },
  { role: 'assistant', content: '<answer>13</answer>' },
];

export function calcTask(id: string, question: string, answer: number): Task {
  return { id, input: { question }, reference: { answer } };
}

/**
 * How the engine returned the model's text: 'whole' (no stop string cut), 'cut' (cut at the stop string, which the
 * response names as stop_reason, as Volt's server and vLLM do), 'cut-unnamed' (cut, recorded before stop_reason existed).
 */
export type StopStyle = 'whole' | 'cut' | 'cut-unnamed';

function span(
  ref: RolloutRef,
  seq: number,
  messages: { role: string; content: string }[],
  whole: string,
  style: StopStyle,
): Span {
  const stop = ['</calc>', '</answer>'].find((s) => whole.endsWith(s));
  const text = style !== 'whole' && stop ? whole.slice(0, -stop.length) : whole;
  const stopReason = style === 'cut' && stop ? { stop_reason: stop } : {};
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString();
  return {
    spanId: `${ref.rolloutId}-${ref.attempt}-${seq}`,
    runId: ref.runId,
    iteration: ref.iteration,
    rolloutId: ref.rolloutId,
    attempt: ref.attempt,
    seq,
    mode: 'train',
    endpoint: 'chat.completions',
    api: 'chat.completions',
    stream: false,
    startedAt: at,
    firstByteAt: at,
    endedAt: at,
    durationMs: 5,
    request: { body: { model: 'policy', messages }, headers: {} },
    requestedModel: 'policy',
    callKind: 'text',
    role: null,
    upstreamRequest: { model: 'smollm2', messages },
    response: {
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop', ...stopReason }],
    },
    promptTokenIds: [1, 2, 3],
    choices: [{ index: 0, tokenIds: [4], logprobs: [-0.1], text, finishReason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    servedBy: { model: 'policy', version: null },
    promptOverlay: null,
    translation: [],
    tokens: 'engine',
    status: 'ok',
    error: null,
  };
}

/**
 * The spans a calculator rollout leaves, as the gateway records them (the agent's own request, its system message
 * included): a <calc> call, the agent's "Result:" reply (after the model's text as the engine returned it), then the
 * model's <answer>. Without `calc`, the model answers at once (one call).
 */
export function calculatorRollout(
  ref: RolloutRef,
  task: Task,
  model: { calc?: string; result?: string; answer: string },
  style: StopStyle = 'whole',
): Span[] {
  const question = `${String(task.input.question)}\n${HINT}`;
  const first = [{ role: 'system', content: CALC_SYSTEM }, ...FEW_SHOT, { role: 'user', content: question }];
  const answer = `<answer>${model.answer}</answer>`;
  if (model.calc === undefined) return [span(ref, 0, first, answer, style)];
  const calc = span(ref, 0, first, `<calc>${model.calc}</calc>`, style);
  const second = [
    ...first,
    { role: 'assistant', content: calc.choices[0]!.text },
    { role: 'user', content: `Result: ${model.result ?? ''}` },
  ];
  return [calc, span(ref, 1, second, answer, style)];
}
