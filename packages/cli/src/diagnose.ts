import { isWebhookVerificationError, parseSignatureHeader, type WebhookErrorCode, Webhooks } from '@pixhook/core';
import {
  bodyVariants,
  envelopeCause,
  headerCauses,
  type LikelyCause,
  timestampCauses,
  unconfirmedBodyCauses,
} from './likely-causes.js';

/** What `diagnoseSignature` checks: a request as it was captured. */
export interface DiagnoseInput {
  /** The endpoint's signing secret, as the user has it (white space included: it is diagnosed). */
  secret: string;
  /** The X-Service-Signature header value, e.g. `t=1700000000,v1=5257a8…`. */
  header: string;
  /** The body's bytes exactly as captured. */
  body: Uint8Array;
  /** Seconds `t` may differ from `now`, or `false` to skip the check; @default 300 */
  tolerance?: number | false;
  /** The time to check the timestamp against, in Unix seconds; @default the current time */
  now?: number;
}

/** The verification steps, in the order pixhook runs them. */
export type DiagnosisStep = 'secret' | 'header' | 'timestamp' | 'signature' | 'body';

/** The answer of `diagnoseSignature`. It never contains the secret or an expected signature. */
export interface Diagnosis {
  /** True when the request verifies as it is. */
  ok: boolean;
  /** The first step that failed. */
  step?: DiagnosisStep;
  /** pixhook's error code for it, as a receiver would answer. */
  code?: WebhookErrorCode;
  /** pixhook's message for it. */
  message?: string;
  /** Whether the body's signature matches the header's, leaving the timestamp aside. */
  signatureMatches?: boolean;
  /** The header's timestamp, its age in seconds at `now` (negative: in the future), the tolerance. */
  timestamp?: { t: number; ageSeconds: number; tolerance: number | false };
  /** The likely causes, most likely first; `confirmed` ones were checked by a variation that verifies. */
  causes: LikelyCause[];
  /** The event, when the body is a valid envelope. */
  event?: { id: string; type: string };
}

const STEP: Partial<Record<WebhookErrorCode, DiagnosisStep>> = {
  MISSING_SIGNATURE: 'header',
  MALFORMED_SIGNATURE: 'header',
  TIMESTAMP_OUT_OF_TOLERANCE: 'timestamp',
  SIGNATURE_MISMATCH: 'signature',
  INVALID_JSON: 'body',
  INVALID_EVENT: 'body',
};

/**
 * Whether `diagnoseSignature` explains a request refused with this code: the verification steps
 * (header, timestamp, signature, envelope), not the method, size, store or handlers.
 *
 * @example
 * diagnosesCode('SIGNATURE_MISMATCH') // true
 */
export function diagnosesCode(code: string): boolean {
  return Object.hasOwn(STEP, code);
}

/**
 * Checks a captured request with `@pixhook/core` and, when it fails, names the step and the
 * likely cause: a malformed header, a timestamp outside the tolerance, a body that was
 * re-serialised or gained or lost a trailing newline, a secret with white space, or a wrong secret.
 * Causes are confirmed by verifying variations of the input with core, never by showing the
 * expected signature.
 *
 * @example
 * const diagnosis = diagnoseSignature({ secret, header: 't=1700000000,v1=5257a8…', body })
 * if (!diagnosis.ok) console.log(diagnosis.step, diagnosis.causes[0]?.text)
 */
export function diagnoseSignature(input: DiagnoseInput): Diagnosis {
  const secret = input.secret.trim();
  if (secret === '') throw new TypeError('pixhook: diagnoseSignature() needs a secret; the one given is empty.');
  const secretHasSpace = secret !== input.secret;
  const tolerance = input.tolerance ?? 300;
  const nowSeconds = input.now ?? Math.floor(Date.now() / 1000);
  // Core rejects a secret with white space outright, so every check runs with the trimmed one.
  const check = verifier(secret, input.header, nowSeconds);

  const first = check(input.body, tolerance);
  const diagnosis: Diagnosis = { ok: false, causes: [] };
  if (first.error) {
    diagnosis.code = first.error.code;
    diagnosis.message = first.error.message;
    diagnosis.step = STEP[first.error.code] ?? 'body';
  }
  if (diagnosis.step === 'header') {
    diagnosis.causes = headerCauses(input.header);
    return diagnosis;
  }
  const { timestamp: t, v1 } = parseSignatureHeader(input.header);
  diagnosis.timestamp = { t, ageSeconds: nowSeconds - t, tolerance };

  // Leave the timestamp aside to tell a stale but authentic request from a forged or altered one.
  const untimed = diagnosis.step === 'timestamp' ? check(input.body, false) : first;
  diagnosis.signatureMatches = untimed.error?.code !== 'SIGNATURE_MISMATCH';
  if (diagnosis.step === 'timestamp') diagnosis.causes.push(...timestampCauses(t, nowSeconds, tolerance));
  if (untimed.event) diagnosis.event = untimed.event;

  if (diagnosis.signatureMatches) {
    if (diagnosis.step === 'body' && first.error) diagnosis.causes.push(envelopeCause(first.error.message));
    if (secretHasSpace) {
      diagnosis.causes.unshift({
        id: 'secret-whitespace',
        confirmed: true,
        text: 'The secret has leading or trailing white space (a copied newline?). The body’s signature with the trimmed secret matches: remove the white space where your app reads the secret.',
      });
      diagnosis.step ??= 'secret';
    }
    diagnosis.ok = diagnosis.step === undefined;
    return diagnosis;
  }

  const found = bodyVariants(input.body).find(
    (variant) => check(variant.body, false).error?.code !== 'SIGNATURE_MISMATCH',
  );
  if (found) diagnosis.causes.push({ ...found.cause, confirmed: true });
  if (secretHasSpace) {
    diagnosis.causes.push({
      id: 'secret-whitespace',
      confirmed: found !== undefined,
      text: found
        ? 'The secret also has leading or trailing white space (a copied newline?): the match above used the trimmed secret.'
        : 'The secret has leading or trailing white space (a copied newline?): the service’s secrets have none. Trimmed, it still does not match.',
    });
  }
  if (found) return diagnosis;
  if (v1.every((value) => !/^[0-9a-fA-F]{64}$/.test(value))) {
    diagnosis.causes.push({
      id: 'v1-not-hex',
      confirmed: true,
      text: `No v1 value is 64 hex digits (${v1.map((value) => `${value.length} characters`).join(', ')}): the header was cut or altered when it was copied.`,
    });
    return diagnosis;
  }
  const bodyCauses = unconfirmedBodyCauses(input.body);
  diagnosis.causes.push(...bodyCauses);
  // An empty body explains everything; blaming the secret as well would send people the wrong way.
  if (bodyCauses.some((cause) => cause.id === 'body-empty')) return diagnosis;
  diagnosis.causes.push({
    id: 'wrong-secret',
    confirmed: false,
    text: 'The secret is not the signing secret of the endpoint that received this delivery (each endpoint has its own: copy it again from the dashboard, Keys → Webhooks), or the body was changed in a way that cannot be undone.',
  });
  return diagnosis;
}

interface CheckResult {
  error?: { code: WebhookErrorCode; message: string };
  event?: { id: string; type: string };
}

/** Verifies with core's `Webhooks`, with the unsigned headers taken from the body so only signed data is judged. */
function verifier(secret: string, header: string, nowSeconds: number) {
  return (body: Uint8Array, tolerance: number | false): CheckResult => {
    const webhooks = new Webhooks({ secret, tolerance, store: false, now: () => nowSeconds * 1000 });
    const headers = {
      'x-service-signature': header,
      'x-service-event': typeOf(body),
      'x-service-delivery': 'pixhook-verify',
    };
    try {
      const event = webhooks.verify(body, headers);
      return { event: { id: event.id, type: event.type } };
    } catch (error) {
      if (!isWebhookVerificationError(error)) throw error;
      return { error: { code: error.code, message: error.message } };
    }
  };
}

function typeOf(body: Uint8Array): string {
  try {
    const type = (JSON.parse(Buffer.from(body).toString('utf8')) as { type?: unknown }).type;
    return typeof type === 'string' ? type : '';
  } catch {
    return '';
  }
}
