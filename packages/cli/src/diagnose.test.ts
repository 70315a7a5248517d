import { sign } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { diagnoseSignature } from './diagnose.js';

const secretArb = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() === s && s !== '');
const now = 1_700_000_000;

function request(secret: string, object: Record<string, unknown>) {
  const { body, headers } = createSignedRequest(createTestEvent('image.created', object, { created: now }), {
    secret,
    timestamp: now,
  });
  return { body: Buffer.from(body), header: headers['x-service-signature'] };
}

describe('diagnoseSignature', () => {
  test('any untouched request verifies', () => {
    fc.assert(
      fc.property(secretArb, fc.dictionary(fc.string(), fc.jsonValue()), (secret, object) => {
        const { body, header } = request(secret, object);
        expect(diagnoseSignature({ secret, header, body, now }).ok).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  test('a trailing newline or a padded secret is confirmed, whatever the secret and body', () => {
    fc.assert(
      fc.property(secretArb, fc.dictionary(fc.string(), fc.jsonValue()), (secret, object) => {
        const { body, header } = request(secret, object);
        const newline = diagnoseSignature({ secret, header, body: Buffer.concat([body, Buffer.from('\n')]), now });
        expect(newline.causes[0]).toMatchObject({ id: 'trailing-newline', confirmed: true });
        const padded = diagnoseSignature({ secret: ` ${secret}\n`, header, body, now });
        expect(padded).toMatchObject({ ok: false, step: 'secret', causes: [{ id: 'secret-whitespace' }] });
      }),
      { numRuns: 50 },
    );
  });

  test('never contains the secret or the signature the body would need', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 12, maxLength: 40 }).filter((s) => s.trim() === s),
        fc.string({ minLength: 12, maxLength: 40 }).filter((s) => s.trim() === s),
        fc.string(),
        fc.constantFrom('', '\n', ' '),
        (secret, otherSecret, tail, padding) => {
          const { body, header } = request(otherSecret, { tail });
          const captured = Buffer.concat([body, Buffer.from(tail)]);
          const text = JSON.stringify(
            diagnoseSignature({ secret: `${secret}${padding}`, header, body: captured, now }),
          );
          expect(text).not.toContain(secret);
          expect(text).not.toContain(sign(secret, captured, now).slice(5));
        },
      ),
      { numRuns: 50 },
    );
  });

  test('the timestamp step reports age and tolerance, and whether the signature matches apart from it', () => {
    const { body, header } = request('whsec_x', {});
    const late = diagnoseSignature({ secret: 'whsec_x', header, body, now: now + 301 });
    expect(late).toMatchObject({
      ok: false,
      step: 'timestamp',
      signatureMatches: true,
      timestamp: { t: now, ageSeconds: 301, tolerance: 300 },
    });
    expect(diagnoseSignature({ secret: 'whsec_x', header, body, now: now + 301, tolerance: false }).ok).toBe(true);
    expect(diagnoseSignature({ secret: 'whsec_x', header, body, now: now - 400 }).causes[0]?.id).toBe(
      'timestamp-future',
    );
  });

  test('a signed body that is not an envelope fails at the body step, signature valid', () => {
    const body = Buffer.from('{"hello":"world"}');
    const header = sign('whsec_x', body, now);
    expect(diagnoseSignature({ secret: 'whsec_x', header, body, now })).toMatchObject({
      ok: false,
      step: 'body',
      code: 'INVALID_EVENT',
      signatureMatches: true,
      causes: [{ id: 'body-not-envelope', confirmed: true }],
    });
  });

  test('header causes: quotes and ";" separators are confirmed by parsing the fixed text', () => {
    const { body, header } = request('whsec_x', {});
    const quoted = diagnoseSignature({ secret: 'whsec_x', header: `"${header}"`, body, now });
    expect(quoted.causes[0]).toMatchObject({ id: 'header-quoted', confirmed: true });
    const semicolons = diagnoseSignature({ secret: 'whsec_x', header: header.replace(',', ';'), body, now });
    expect(semicolons.causes[0]).toMatchObject({ id: 'header-separator', confirmed: true });
    expect(diagnoseSignature({ secret: 'whsec_x', header: '', body, now })).toMatchObject({
      step: 'header',
      code: 'MISSING_SIGNATURE',
      causes: [{ id: 'header-missing' }],
    });
  });
});
