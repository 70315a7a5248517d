import { STATUS_CODES } from 'node:http';
import pc from 'picocolors';

export { pc };

/** Prints one JSON value on its own line, for scripts. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** `200 OK`, coloured by class. */
export function formatStatus(status: number): string {
  const text = `${status} ${STATUS_CODES[status] ?? ''}`.trim();
  if (status >= 200 && status < 300) return pc.green(text);
  if (status >= 500) return pc.red(text);
  return pc.yellow(text);
}

/** pixhook's error code in a response body, if it is one (`{"error":{"code"}}`). */
export function errorCode(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** A response body for a terminal: pretty JSON when it is JSON, cut after `max` characters. */
export function formatBody(body: string, max = 2_000): string {
  let text = body;
  try {
    text = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    // Not JSON: show it as it came.
  }
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}
