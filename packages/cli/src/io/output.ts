import { STATUS_CODES } from 'node:http';
import pc from 'picocolors';
import { escapeText, safeJson } from './escape.js';

export { pc };

/** Prints one JSON value on its own line, for scripts (terminal controls written as `\uXXXX`). */
export function printJson(value: unknown): void {
  process.stdout.write(`${safeJson(value, 2)}\n`);
}

/** `200 OK`, coloured by class. */
export function formatStatus(status: number): string {
  const text = `${status} ${STATUS_CODES[status] ?? ''}`.trim();
  if (status >= 200 && status < 300) return pc.green(text);
  if (status >= 500) return pc.red(text);
  return pc.yellow(text);
}

/** pixhook's error code in a response body, if it is one (`{"error":{"code"}}`), unescaped. */
export function errorCode(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

function parseJson(body: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(body) };
  } catch {
    return undefined;
  }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'", nbsp: ' ' };

/** The words of an HTML page, without its markup: an error page reads as its message. */
function htmlText(html: string): string {
  return html
    .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(amp|lt|gt|quot|apos|#39|nbsp);/g, (_, name: string) => ENTITIES[name] as string);
}

/**
 * A response body for a terminal, escaped. JSON is shown indented, cut after `max` characters.
 * Anything else (a framework's HTML 404 page, a proxy's 502) is summarised on one line: its
 * content type, its size and the first `excerpt` characters of its text.
 */
export function formatBody(
  body: string,
  contentType?: string,
  options: { max?: number; excerpt?: number } = {},
): string {
  const { max = 2_000, excerpt = 200 } = options;
  const json = parseJson(body);
  if (json) {
    const text = safeJson(json.value, 2);
    return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
  }
  const type = contentType?.trim() || 'no content type';
  const words = (/html/i.test(type) ? htmlText(body) : body).replace(/\s+/g, ' ').trim();
  const cut = words.length > excerpt ? `${words.slice(0, excerpt)}…` : words;
  return pc.dim(`not JSON (${escapeText(type)}, ${Buffer.byteLength(body)} bytes)${cut ? ': ' : ''}`) + escapeText(cut);
}

/**
 * What was not read of an answer longer than `deliver`'s bound (1 MiB), e.g. `… 2,097,152 bytes
 * more, not read: pixhook reads the first 1 MiB of an answer (the service does not use its body)`.
 */
export function truncationNote(outcome: { moreBytes?: number | undefined }): string {
  const more =
    outcome.moreBytes === undefined ? 'more bytes' : `${outcome.moreBytes.toLocaleString('en-US')} bytes more`;
  return `… ${more}, not read: pixhook reads the first 1 MiB of an answer (the service does not use its body)`;
}
