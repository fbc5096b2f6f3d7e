/**
 * Ollama's keep_alive: how long a model stays loaded after a request. A number is seconds; a
 * string is a Go duration ("5m", "1h30m", "10s", "250ms") or a number of seconds ("300", "-1");
 * negative keeps it until evicted, 0 unloads it once the request ends.
 */
import { invalidRequest } from '../api-error';

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g;

/** Milliseconds, -1 for "until evicted", undefined when absent (the server's default applies). */
export function keepAliveMs(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = typeof value === 'number' ? value : /^[+-]?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : undefined;
  if (seconds !== undefined) {
    if (!Number.isFinite(seconds)) throw invalidRequest(`keep_alive: ${value} is not a duration`, 'keep_alive');
    return seconds < 0 ? -1 : Math.round(seconds * 1000);
  }
  const text = (value as string).trim();
  const match = DURATION.exec(text);
  if (!match) throw invalidRequest(`keep_alive: '${text.slice(0, 32)}' is not a duration (such as "5m", "1h", "30s", "-1" or a number of seconds)`, 'keep_alive');
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(PART)) ms += Number(amount) * UNITS[unit];
  return match[1] === '-' ? -1 : Math.min(Math.round(ms), 2 ** 31 - 1);
}
