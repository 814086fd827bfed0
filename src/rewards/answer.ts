import type { z } from 'zod';
import type { answerSourceSchema } from './spec.js';
import type { RolloutEvidence } from './types.js';

export type AnswerSource = z.output<typeof answerSourceSchema>;

/** The raw text a reward reads: the output file or the last assistant message. */
export function sourceText(source: AnswerSource, evidence: RolloutEvidence): string | null {
  return source === 'output_file' ? evidence.result.outputText : evidence.lastAssistantMessage;
}

/** Apply the optional pattern: first capture group, else the whole match; null when nothing matches. */
export function extractAnswer(text: string | null, pattern: string | undefined): string | null {
  if (text === null) return null;
  if (pattern === undefined) return text.trim();
  const match = new RegExp(pattern, 'm').exec(text);
  if (!match) return null;
  return (match[1] ?? match[0]).trim();
}

/** Normalised form for string_match: case-folded, whitespace collapsed, trailing punctuation dropped. */
export function normaliseAnswer(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!?;:,]+$/, '')
    .trim();
}

/** A number out of free text (the last one): strips thousands separators and a leading $, reads a bare fraction like 3/4. */
export function parseNumber(text: string): number | null {
  const cleaned = text
    .replace(/(\d),(?=\d{3}\b)/g, '$1')
    .replace(/^\$/, '')
    .trim();
  const fraction = /^(-?\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)$/.exec(cleaned);
  if (fraction) {
    const den = Number(fraction[2]);
    return den === 0 ? null : Number(fraction[1]) / den;
  }
  // The last number: free-text answers reason first and conclude last ("step 1 ... so 42").
  const all = cleaned.match(/-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/g);
  return all ? Number(all[all.length - 1]) : null;
}
