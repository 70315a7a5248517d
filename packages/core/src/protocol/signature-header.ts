import { WebhookVerificationError } from './errors.js';

/** The parts of an `X-Service-Signature` header that pixhook uses. */
export interface ParsedSignatureHeader {
  /** The `t` value exactly as sent (leading zeros included): it is part of the signed string. */
  t: string;
  /** `t` as a number of Unix seconds. */
  timestamp: number;
  /** Every `v1` value, in the order sent. */
  v1: string[];
}

const DIGITS = /^[0-9]+$/;

/**
 * The form the service sends, `t=<digits>,v1=<64 characters>`, read without splitting or regexes
 * (a quarter of the general parser's cost); undefined for every other form, which the general
 * parser then reads. The v1 text is checked as hex when it is compared.
 */
function parseCanonical(header: string): ParsedSignatureHeader | undefined {
  const comma = header.indexOf(',');
  if (comma < 3 || header.length !== comma + 68 || !header.startsWith('t=') || !header.startsWith('v1=', comma + 1)) {
    return undefined;
  }
  if (header.indexOf(',', comma + 4) !== -1) return undefined;
  for (let i = 2; i < comma; i++) {
    const code = header.charCodeAt(i);
    if (code < 48 || code > 57) return undefined;
  }
  const t = header.slice(2, comma);
  return { t, timestamp: timestampOf(t), v1: [header.slice(comma + 4)] };
}

/**
 * `t` (digits only) as a number of seconds; `MALFORMED_SIGNATURE` beyond `Number.MAX_SAFE_INTEGER`
 * (285 million years from 1970): no real time, and past it the number is no longer exact (then
 * `Infinity`), which handlers would see as `context.timestamp` with `tolerance: false`.
 */
function timestampOf(t: string): number {
  const timestamp = Number(t);
  if (timestamp > Number.MAX_SAFE_INTEGER) throw malformed('t is beyond any real time (more than 2^53 - 1 seconds)');
  return timestamp;
}

function malformed(detail: string): WebhookVerificationError {
  return new WebhookVerificationError(
    'MALFORMED_SIGNATURE',
    `The X-Service-Signature header is malformed: ${detail}. Expected "t=<unix seconds>,v1=<hex signature>".`,
  );
}

/**
 * Parses `X-Service-Signature` strictly: exactly one `t` of digits only, at least one non-empty
 * `v1`, parts in any order separated by commas (spaces after them tolerated), unknown schemes
 * (`v0=` …) ignored, `t` at most `Number.MAX_SAFE_INTEGER`. Throws `MISSING_SIGNATURE` or
 * `MALFORMED_SIGNATURE`.
 *
 * @example
 * parseSignatureHeader('t=1700000000,v1=5257a8…') // { t: '1700000000', timestamp: 1700000000, v1: ['5257a8…'] }
 */
export function parseSignatureHeader(header: string | undefined): ParsedSignatureHeader {
  if (header === undefined || header.trim() === '') {
    throw new WebhookVerificationError(
      'MISSING_SIGNATURE',
      'The X-Service-Signature header is missing: only signed deliveries from the service are accepted.',
    );
  }
  const canonical = parseCanonical(header);
  if (canonical) return canonical;
  let t: string | undefined;
  const v1: string[] = [];
  for (const rawPart of header.split(',')) {
    const part = rawPart.trim();
    if (part === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw malformed(`"${truncate(part)}" is not a key=value pair`);
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === 't') {
      if (t !== undefined) throw malformed('it carries more than one t');
      if (!DIGITS.test(value)) throw malformed('t must be Unix seconds, digits only');
      t = value;
    } else if (key === 'v1') {
      if (value === '') throw malformed('a v1 value is empty');
      v1.push(value);
    }
  }
  if (t === undefined) throw malformed('it has no t');
  if (v1.length === 0) throw malformed('it has no v1');
  return { t, timestamp: timestampOf(t), v1 };
}

function truncate(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
