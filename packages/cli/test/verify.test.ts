import { sign } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { ensureBuilt, run, SECRET } from '@pixhook/test-helpers/cli';
import { beforeAll, describe, expect, test } from 'vitest';

beforeAll(() => ensureBuilt());

const event = createTestEvent('image.created', undefined, { id: 'evt_verify_1' });
const now = Math.floor(Date.now() / 1000);
// The request as the service sent it.
const { body, headers } = createSignedRequest(event, { secret: SECRET, timestamp: now });
const header = headers['x-service-signature'];

interface Case {
  header?: string;
  body?: string;
  secret?: string;
  args?: string[];
}

/** Runs `pixhook verify --json` on a captured request, and checks that nothing secret came out. */
async function verify({ header: h = header, body: b = body, secret = SECRET, args = [] }: Case) {
  const result = await run(['verify', '--header', h, '--json', ...args], { input: b, secret });
  for (const output of [result.stdout, result.stderr]) {
    expect(output).not.toContain(SECRET);
    // Nor the signature the captured body would need, which would let anyone forge this one.
    expect(output).not.toContain(sign(SECRET, b, now).slice(-64));
  }
  return { code: result.code, diagnosis: JSON.parse(result.stdout), stdout: result.stdout };
}

describe.concurrent('pixhook verify', () => {
  test('an untouched request verifies: exit 0', async () => {
    const { code, diagnosis } = await verify({});
    expect(code).toBe(0);
    expect(diagnosis).toMatchObject({ ok: true, signatureMatches: true, event: { id: 'evt_verify_1' } });
  });

  test('a body that gained a trailing newline: step signature, cause confirmed', async () => {
    const { code, diagnosis } = await verify({ body: `${body}\n` });
    expect(code).toBe(1);
    expect(diagnosis).toMatchObject({ ok: false, step: 'signature', code: 'SIGNATURE_MISMATCH' });
    expect(diagnosis.causes[0]).toMatchObject({ id: 'trailing-newline', confirmed: true });
  });

  test('a body re-serialised with other white space: cause confirmed', async () => {
    const { diagnosis } = await verify({ body: JSON.stringify(JSON.parse(body), null, 2) });
    expect(diagnosis.step).toBe('signature');
    expect(diagnosis.causes[0]).toMatchObject({ id: 'body-reserialised', confirmed: true });
  });

  test('a body re-serialised with another key order: cause confirmed', async () => {
    const { id, type, created, data } = JSON.parse(body);
    const { diagnosis } = await verify({ body: JSON.stringify({ data, type, created, id }) });
    expect(diagnosis.causes[0]).toMatchObject({ id: 'body-reserialised', confirmed: true });
    expect(diagnosis.causes[0].text).toContain('key order');
  });

  test('a secret with white space around it: the trimmed secret matches, it is said so', async () => {
    const { code, diagnosis } = await verify({ secret: `${SECRET}\n` });
    expect(code).toBe(1);
    expect(diagnosis).toMatchObject({ ok: false, step: 'secret', signatureMatches: true });
    expect(diagnosis.causes[0]).toMatchObject({ id: 'secret-whitespace', confirmed: true });
  });

  test('a wrong secret: named as the likely cause', async () => {
    const { code, diagnosis } = await verify({ secret: 'whsec_another_endpoint' });
    expect(code).toBe(1);
    expect(diagnosis.step).toBe('signature');
    expect(diagnosis.causes.map((cause: { id: string }) => cause.id)).toEqual(['wrong-secret']);
  });

  test('a timestamp older than the tolerance: step timestamp, age and tolerance given; --now checks it as captured', async () => {
    const old = now - 3_600;
    const stale = sign(SECRET, body, old);
    const [late, asCaptured] = await Promise.all([
      verify({ header: stale }),
      verify({ header: stale, args: ['--now', String(old + 5)] }),
    ]);
    expect(late.code).toBe(1);
    expect(late.diagnosis).toMatchObject({
      step: 'timestamp',
      code: 'TIMESTAMP_OUT_OF_TOLERANCE',
      signatureMatches: true,
      timestamp: { t: old, tolerance: 300 },
    });
    expect(late.diagnosis.timestamp.ageSeconds).toBeGreaterThanOrEqual(3_600);
    expect(late.diagnosis.causes[0]).toMatchObject({ id: 'timestamp-old', confirmed: true });
    expect(late.diagnosis.causes[0].text).toContain('1 h');
    expect(asCaptured.code).toBe(0);
  });

  test('a timestamp in milliseconds is recognised', async () => {
    const { diagnosis } = await verify({ header: sign(SECRET, body, now * 1000) });
    expect(diagnosis.step).toBe('timestamp');
    expect(diagnosis.causes[0]).toMatchObject({ id: 'timestamp-milliseconds', confirmed: true });
  });

  test('a malformed header: step header; a value copied with its name is recognised', async () => {
    const [named, broken] = await Promise.all([
      verify({ header: `X-Service-Signature: ${header}` }),
      verify({ header: 't=1.5,v1=abc' }),
    ]);
    expect(named.diagnosis).toMatchObject({ step: 'header', code: 'MALFORMED_SIGNATURE' });
    expect(named.diagnosis.causes[0]).toMatchObject({ id: 'header-name-included', confirmed: true });
    expect(broken.code).toBe(1);
    expect(broken.diagnosis).toMatchObject({ step: 'header', code: 'MALFORMED_SIGNATURE' });
  });

  test('a signature cut when copied is recognised', async () => {
    const { diagnosis } = await verify({ header: header.slice(0, -6) });
    expect(diagnosis.causes.map((cause: { id: string }) => cause.id)).toContain('v1-not-hex');
  });

  test('the text output names the step and the cause for people', async () => {
    const result = await run(['verify', '--header', header], { input: `${body}\n` });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('✗ fails at step 3 signature: SIGNATURE_MISMATCH');
    expect(result.stdout).toContain('[confirmed] The body ends with a newline that was not signed');
  });
});
