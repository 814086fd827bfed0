import { UsageError } from './command.js';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const UNIT_OF: Record<string, string> = {
  s: 's',
  sec: 's',
  secs: 's',
  second: 's',
  seconds: 's',
  m: 'm',
  min: 'm',
  mins: 'm',
  minute: 'm',
  minutes: 'm',
  h: 'h',
  hr: 'h',
  hrs: 'h',
  hour: 'h',
  hours: 'h',
  d: 'd',
  day: 'd',
  days: 'd',
  w: 'w',
  week: 'w',
  weeks: 'w',
};

/** A CLI duration ("36h", "1 day", "90 minutes") in milliseconds; anything else is a usage error naming the option. */
export function parseDuration(option: string, value: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(value.trim());
  const unit = m ? UNIT_OF[m[2]!.toLowerCase()] : undefined;
  const ms = m && unit ? Math.round(Number(m[1]) * UNIT_MS[unit]!) : 0;
  if (!(ms > 0))
    throw new UsageError(
      `${option}: expected a duration such as "36h", "1 day" or "90 minutes", got ${JSON.stringify(value)}`,
    );
  return ms;
}
