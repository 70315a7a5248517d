import { parseSignatureHeader } from '@pixhook/core';
import { formatDuration } from './schedule.js';

/** Names of the causes `diagnoseSignature` recognises. */
export type CauseId =
  | 'secret-whitespace'
  | 'wrong-secret'
  | 'header-missing'
  | 'header-name-included'
  | 'header-quoted'
  | 'header-separator'
  | 'header-format'
  | 'timestamp-milliseconds'
  | 'timestamp-old'
  | 'timestamp-future'
  | 'v1-not-hex'
  | 'trailing-newline'
  | 'missing-trailing-newline'
  | 'line-endings'
  | 'body-reserialised'
  | 'body-empty'
  | 'body-not-json'
  | 'body-not-envelope';

/** One likely cause of a failed verification. */
export interface LikelyCause {
  id: CauseId;
  /** True when a variation of the input that fixes just this cause verifies. */
  confirmed: boolean;
  /** One or two sentences a person can act on. */
  text: string;
}

/** A variation of the body and the cause it would confirm if it verified. */
export interface BodyVariant {
  body: Uint8Array;
  cause: Omit<LikelyCause, 'confirmed'>;
}

function parses(header: string): boolean {
  try {
    parseSignatureHeader(header);
    return true;
  } catch {
    return false;
  }
}

/** Causes of a header that core's `parseSignatureHeader` rejects, confirmed by parsing the fixed text. */
export function headerCauses(header: string): LikelyCause[] {
  const value = header.trim();
  if (value === '') {
    return [
      {
        id: 'header-missing',
        confirmed: true,
        text: 'The header value is empty: the request carried no X-Service-Signature, or the wrong header was copied.',
      },
    ];
  }
  const causes: LikelyCause[] = [];
  const withoutName = value.replace(/^x-service-signature\s*:\s*/i, '');
  if (withoutName !== value) {
    causes.push({
      id: 'header-name-included',
      confirmed: parses(withoutName),
      text: 'The value starts with the header’s name: pass only what follows "X-Service-Signature:".',
    });
  }
  const unquoted = withoutName.replace(/^(['"])(.*)\1$/s, '$2');
  if (unquoted !== withoutName) {
    causes.push({
      id: 'header-quoted',
      confirmed: parses(unquoted),
      text: 'The value is wrapped in quotes: pass the text between them.',
    });
  }
  if (unquoted.includes(';') && parses(unquoted.replaceAll(';', ','))) {
    causes.push({
      id: 'header-separator',
      confirmed: true,
      text: 'The parts are separated by ";": the service separates them with ",".',
    });
  }
  if (causes.length === 0) {
    causes.push({
      id: 'header-format',
      confirmed: false,
      text: 'Expected "t=<unix seconds>,v1=<64 hex digits>": copy the X-Service-Signature value exactly as received, without its name or quotes.',
    });
  }
  return causes;
}

/** Causes of a timestamp outside the tolerance. */
export function timestampCauses(t: number, nowSeconds: number, tolerance: number | false): LikelyCause[] {
  if (tolerance === false) return [];
  const age = nowSeconds - t;
  const causes: LikelyCause[] = [];
  if (t > 1e11 && Math.abs(nowSeconds - Math.floor(t / 1000)) <= tolerance) {
    causes.push({
      id: 'timestamp-milliseconds',
      confirmed: true,
      text: 't is in milliseconds; the service signs Unix seconds. Whoever signed this request used Date.now() instead of Math.floor(Date.now() / 1000).',
    });
  } else if (age > 0) {
    causes.push({
      id: 'timestamp-old',
      confirmed: true,
      text: `The request was signed ${formatDuration(age * 1000)} ago, beyond the ${tolerance} s tolerance: a captured request goes stale (replay protection). Check it as of when it was captured with --now ${t}; a receiver that rejects fresh deliveries this way has its clock out of sync (NTP).`,
    });
  } else {
    causes.push({
      id: 'timestamp-future',
      confirmed: true,
      text: `The request is signed ${formatDuration(-age * 1000)} in the future, beyond the ${tolerance} s tolerance: this machine's clock or the signer's is wrong (NTP).`,
    });
  }
  return causes;
}

const ENVELOPE_ORDER = ['id', 'type', 'created', 'data'];

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

function envelopeOrder(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  const keys = [...ENVELOPE_ORDER.filter((key) => key in record), ...Object.keys(record)];
  return Object.fromEntries([...new Set(keys)].map((key) => [key, record[key]]));
}

const encoder = new TextEncoder();

/**
 * Variations of a body that undo one common change: a trailing newline added or lost, CRLF line
 * endings, JSON re-serialised with other white space or key order.
 */
export function bodyVariants(body: Uint8Array): BodyVariant[] {
  const text = Buffer.from(body).toString('utf8');
  const variants: BodyVariant[] = [];
  const add = (candidate: string, cause: BodyVariant['cause']) => {
    if (candidate !== text && !variants.some((v) => Buffer.from(v.body).toString('utf8') === candidate)) {
      variants.push({ body: encoder.encode(candidate), cause });
    }
  };
  if (/\n$/.test(text)) {
    add(text.replace(/(\r?\n)+$/, ''), {
      id: 'trailing-newline',
      text: 'The body ends with a newline that was not signed (editors, echo and here-strings add one); without it the body’s signature matches. Keep the body byte for byte as received (printf, not echo).',
    });
  } else {
    add(`${text}\n`, {
      id: 'missing-trailing-newline',
      text: 'The body lost its final newline; with it the body’s signature matches. Keep the body byte for byte as received.',
    });
  }
  if (text.includes('\r\n')) {
    add(text.replaceAll('\r\n', '\n'), {
      id: 'line-endings',
      text: 'The body’s line endings were changed to CRLF (a Windows editor or a git setting); with LF the body’s signature matches.',
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return variants;
  }
  const forms: [string, string][] = [
    [JSON.stringify(json), 'written compactly'],
    [
      JSON.stringify(envelopeOrder(json)),
      'written with the envelope’s keys in the service’s order (id, type, created, data)',
    ],
    [JSON.stringify(sortKeys(json)), 'written with its keys sorted'],
    [JSON.stringify(json, null, 2), 'indented with 2 spaces'],
    [JSON.stringify(json, null, 4), 'indented with 4 spaces'],
    [JSON.stringify(json, null, '\t'), 'indented with tabs'],
  ];
  for (const [form, how] of forms) {
    add(form, {
      id: 'body-reserialised',
      text: `The body was re-serialised (white space or key order changed): the same JSON ${how} matches. Verify the raw bytes as received, before any JSON parser (express.json(), a logger) re-formats them.`,
    });
  }
  return variants;
}

/** Causes that the body's look suggests when no variation verifies. */
export function unconfirmedBodyCauses(body: Uint8Array): LikelyCause[] {
  const text = Buffer.from(body).toString('utf8');
  if (text.trim() === '') {
    return [
      {
        id: 'body-empty',
        confirmed: false,
        text: 'The body is empty: pass the captured body with --body FILE or on stdin.',
      },
    ];
  }
  try {
    const json = JSON.parse(text);
    if (text !== JSON.stringify(json) && /\n\s/.test(text)) {
      return [
        {
          id: 'body-reserialised',
          confirmed: false,
          text: 'The body is pretty-printed: if it was formatted after it was received (a log viewer, a JSON parser), its signature cannot match. Capture the raw bytes.',
        },
      ];
    }
    return [];
  } catch {
    return [
      {
        id: 'body-not-json',
        confirmed: false,
        text: 'The body is not JSON: it may have been cut, decompressed or decoded in another character set on the way.',
      },
    ];
  }
}

/** The cause when the signature matches but the body is not an event envelope. */
export function envelopeCause(message: string): LikelyCause {
  return {
    id: 'body-not-envelope',
    confirmed: true,
    text: `The signature is valid, so this is what was signed, but it is not an event envelope: ${message}`,
  };
}
