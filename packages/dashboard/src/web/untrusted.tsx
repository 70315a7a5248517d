/**
 * Characters that would change how the text around them reads rather than show: the bidirectional
 * controls (Trojan Source, CVE-2021-42574), the line and paragraph separators, and the C0 and C1
 * controls other than line feed and tab.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const HIDDEN = /([\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069])/;

/** `U+202E` for a character. */
function codePoint(char: string): string {
  return `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * Text read from production (an id, a header, a body, an error): shown as text (Preact escapes
 * it; never markup), with every invisible control character shown as its code point in a marked
 * box instead of acting on the text, and isolated so it cannot reorder what is around it.
 */
export function Untrusted({ text }: { text: string }) {
  if (!HIDDEN.test(text)) return <bdi>{text}</bdi>;
  return (
    <bdi>
      {text.split(HIDDEN).map((part, index) =>
        index % 2 === 1 ? (
          <span class="control" data-testid="control-char" title={`An invisible character, ${codePoint(part)}`}>
            {codePoint(part)}
          </span>
        ) : (
          part
        ),
      )}
    </bdi>
  );
}

/** Bytes as hex, 16 a line with their offset: for a body that is not UTF-8. */
export function hexDump(bytes: Uint8Array, max = 65_536): string {
  const lines: string[] = [];
  const end = Math.min(bytes.length, max);
  for (let offset = 0; offset < end; offset += 16) {
    const row = Array.from(bytes.subarray(offset, Math.min(offset + 16, end)), (byte) =>
      byte.toString(16).padStart(2, '0'),
    );
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${row.join(' ')}`);
  }
  if (bytes.length > end) lines.push(`… ${(bytes.length - end).toLocaleString('en-US')} bytes more`);
  return lines.join('\n');
}

/** base64 to bytes, in the browser. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** A time in ms since the epoch as a local ISO-like date and time. */
export function formatWhen(ms: number): string {
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) return String(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

/** A size in bytes for people. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1_048_576) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1_048_576).toFixed(1)} MiB`;
}
