import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, isWebhookVerificationError, WebhookVerificationError } from '../index.js';

describe('WebhookVerificationError', () => {
  it.each(Object.entries(ERROR_STATUS))('%s has status %i', (code, status) => {
    const cause = new Error('inner');
    const error = new WebhookVerificationError(code as keyof typeof ERROR_STATUS, 'A message a person can act on.', {
      cause,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('WebhookVerificationError');
    expect(error.code).toBe(code);
    expect(error.status).toBe(status);
    expect(error.cause).toBe(cause);
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      error: { code, message: 'A message a person can act on.' },
    });
  });

  it('maps the contract table', () => {
    expect(ERROR_STATUS).toMatchObject({
      METHOD_NOT_ALLOWED: 405,
      PAYLOAD_TOO_LARGE: 413,
      MISSING_SIGNATURE: 400,
      MALFORMED_SIGNATURE: 400,
      TIMESTAMP_OUT_OF_TOLERANCE: 400,
      SIGNATURE_MISMATCH: 400,
      INVALID_JSON: 400,
      INVALID_EVENT: 400,
      EVENT_TYPE_MISMATCH: 400,
      MISSING_HEADER: 400,
      IN_FLIGHT: 409,
      HANDLER_FAILED: 500,
      RAW_BODY_UNAVAILABLE: 500,
      STORE_UNAVAILABLE: 503,
    });
  });

  it('maps the codes pixhook adds beyond the contract', () => {
    expect(ERROR_STATUS).toMatchObject({
      BODY_UNREADABLE: 400,
      BODY_TIMEOUT: 408,
      HANDLER_TIMEOUT: 503,
      INTERNAL_ERROR: 500,
      DUPLICATE_WINDOW_SHORTENED: 200,
    });
  });
});

describe('isWebhookVerificationError', () => {
  /** What another copy of @pixhook/core (a CJS one beside an ESM one) would throw. */
  class WebhookVerificationErrorFromAnotherCopy extends Error {
    override readonly name = 'WebhookVerificationError';
    constructor(
      readonly code: string,
      readonly status: number,
    ) {
      super('from another copy');
    }
  }

  it('recognises its own errors', () => {
    expect(isWebhookVerificationError(new WebhookVerificationError('IN_FLIGHT', 'busy'))).toBe(true);
  });

  it('recognises an error of another copy of core, by name and code', () => {
    const other = new WebhookVerificationErrorFromAnotherCopy('SIGNATURE_MISMATCH', 400);
    expect(other).not.toBeInstanceOf(WebhookVerificationError);
    expect(isWebhookVerificationError(other)).toBe(true);
  });

  it('recognises a structurally equal plain object', () => {
    expect(isWebhookVerificationError({ name: 'WebhookVerificationError', code: 'PAYLOAD_TOO_LARGE' })).toBe(true);
    expect(
      isWebhookVerificationError({ name: 'WebhookVerificationError', code: 'INVALID_JSON', status: 400, message: 'x' }),
    ).toBe(true);
  });

  it.each([
    ['an unknown code', { name: 'WebhookVerificationError', code: 'NOT_A_CODE' }],
    ['a code that is not a string', { name: 'WebhookVerificationError', code: 400 }],
    ['no code', { name: 'WebhookVerificationError' }],
    ['another name', { name: 'Error', code: 'SIGNATURE_MISMATCH' }],
    ['a plain Error with a code', Object.assign(new Error('x'), { code: 'SIGNATURE_MISMATCH' })],
    ['an inherited code name', { name: 'WebhookVerificationError', code: 'toString' }],
    ['null', null],
    ['undefined', undefined],
    ['a string', 'WebhookVerificationError'],
    ['a number', 400],
  ])('rejects %s', (_name, value) => {
    expect(isWebhookVerificationError(value)).toBe(false);
  });
});
