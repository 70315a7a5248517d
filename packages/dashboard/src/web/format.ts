import { formatDuration } from '@pixhook/cli/schedule';

/** A service duration in seconds for people: `1 min`, `2 h`, `24 h` (the CLI's own wording). */
export function formatSeconds(seconds: number): string {
  return formatDuration(seconds * 1000);
}

/** A real duration in milliseconds: `17 ms`, `1.5 s`. */
export function formatMs(ms: number): string {
  return formatDuration(ms);
}

/** An ISO 8601 time as local `HH:MM:SS.mmm`. */
export function formatTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const two = (n: number) => String(n).padStart(2, '0');
  const ms = String(date.getMilliseconds()).padStart(3, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${ms}`;
}

/** A body pretty-printed when it is JSON, else as it came. */
export function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** The formatted copies made so far, newest last: a few, since each may be a large string. */
const PRETTY_CACHE = new Map<string, string>();
const PRETTY_CACHE_SIZE = 16;

/**
 * `prettyBody`, made once per body: a later render (every log update re-renders the page) finds the
 * copy made before instead of parsing and formatting the body again.
 */
export function prettyBodyCached(body: string): string {
  let pretty = PRETTY_CACHE.get(body);
  if (pretty === undefined) {
    pretty = prettyBody(body);
    if (PRETTY_CACHE.size >= PRETTY_CACHE_SIZE) PRETTY_CACHE.delete(PRETTY_CACHE.keys().next().value as string);
    PRETTY_CACHE.set(body, pretty);
  }
  return pretty;
}

/** Whether a body may be JSON (an object or an array), judged by its first character, without parsing it. */
export function looksLikeJson(body: string): boolean {
  return /^\s*[[{]/.test(body.slice(0, 64));
}

/** Headers as `name: value` lines, in the order they came. */
export function formatHeaders(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
}

export type JsonObjectCheck = { object: Record<string, unknown>; error?: undefined } | { error: string };

/** Parses text that must be a JSON object (not an array, null or a scalar). */
export function parseJsonObject(text: string, what: string): JsonObjectCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `Invalid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { error: `${what} must be a JSON object` };
  }
  return { object: value as Record<string, unknown> };
}
