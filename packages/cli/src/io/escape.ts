/**
 * Characters a terminal may act on instead of showing: the C0 controls (ESC starts escape
 * sequences; BEL, BS and CR rewrite what is shown), DEL, the C1 controls (0x9b is a one-character
 * CSI), the Unicode line and paragraph separators, and the bidirectional controls that reorder
 * what follows them (Trojan Source, CVE-2021-42574).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same set less C0, which `JSON.stringify` already writes as `\n`, `\u001b`, …. */
const NOT_ESCAPED_BY_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function visible(char: string): string {
  const code = char.charCodeAt(0);
  return NAMED[char] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`);
}

/**
 * Text from a request or from a receiver's answer, made safe to print on a terminal: every
 * control character is shown as an escape (`\x1b`, `\x9b`, `\n`, `\u202e`), never written raw, so
 * a header or a body cannot move the cursor, recolour, retitle or reorder the output. Everything
 * else (accents, emoji, backslashes) is kept as it is.
 *
 * @example
 * escapeText('evil\x1b[2Jid') // 'evil\\x1b[2Jid'
 */
export function escapeText(text: unknown): string {
  return String(text).replace(CONTROL, visible);
}

/**
 * `JSON.stringify` with every character a terminal may act on written as a `\uXXXX` escape.
 * The JSON means exactly the same (`jq` reads the same strings back); only the text is safe to
 * print. Outside strings JSON holds no such characters, so the replacement only touches strings.
 *
 * @example
 * safeJson({ id: 'a\u009bb' }) // '{"id":"a\\u009bb"}'
 */
export function safeJson(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(
    NOT_ESCAPED_BY_JSON,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
