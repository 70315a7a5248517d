import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sign } from '../index.js';

const SECRET = 'whsec_sign_test_5d4c3b2a';

/** The expected header, computed independently of pixhook. */
function reference(secret: string, t: string, body: Uint8Array | string): string {
  const hmac = createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`${t}.`), Buffer.from(body)]));
  return `t=${t},v1=${hmac.digest('hex')}`;
}

describe('sign', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('matches a fixed known answer', () => {
    // printf '%s' '1700000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac 'whsec_sign_test_5d4c3b2a'
    expect(sign(SECRET, '{"id":"evt_1"}', 1_700_000_000)).toBe(
      't=1700000000,v1=d4809ca1c6a7d38b104bb4660810237565d86953560386dd9b989a1b21a9501c',
    );
  });

  it.each([
    ['an ASCII body', '{"id":"evt_1","type":"image.created"}'],
    ['an empty body', ''],
    ['non-ASCII text', '{"name":"café 日本 🙂"}'],
    ['a body with a newline', '{"a":1}\n'],
  ])('signs %s as HMAC-SHA256 of "t.body" in lower-case hex', (_name, body) => {
    expect(sign(SECRET, body, 1_700_000_000)).toBe(reference(SECRET, '1700000000', body));
  });

  it('signs bytes, including bytes that are not UTF-8', () => {
    const bytes = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x7d]);
    expect(sign(SECRET, bytes, 5)).toBe(reference(SECRET, '5', bytes));
    // Decoding them first would change what is signed.
    expect(sign(SECRET, Buffer.from(bytes).toString('utf8'), 5)).not.toBe(sign(SECRET, bytes, 5));
  });

  it('a string and its UTF-8 bytes give the same signature', () => {
    const text = '{"name":"ünïcødé"}';
    expect(sign(SECRET, new TextEncoder().encode(text), 9)).toBe(sign(SECRET, text, 9));
    expect(sign(SECRET, Buffer.from(text), 9)).toBe(sign(SECRET, text, 9));
  });

  it('depends on the secret, the timestamp and every byte of the body', () => {
    const base = sign(SECRET, 'body', 100);
    expect(sign(`${SECRET}x`, 'body', 100)).not.toBe(base);
    expect(sign(SECRET, 'body', 101).split('v1=')[1]).not.toBe(base.split('v1=')[1]);
    expect(sign(SECRET, 'bodY', 100)).not.toBe(base);
  });

  it('keeps a timestamp given as text, leading zeros included, and signs it as written', () => {
    expect(sign(SECRET, 'b', '0001700000000')).toBe(reference(SECRET, '0001700000000', 'b'));
    expect(sign(SECRET, 'b', '0001700000000')).not.toBe(sign(SECRET, 'b', 1_700_000_000).replace('t=', 't=000'));
  });

  it('accepts t=0', () => {
    expect(sign(SECRET, 'b', 0)).toBe(reference(SECRET, '0', 'b'));
  });

  it('defaults the timestamp to the current Unix second', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date(1_750_000_000_999));
    expect(sign(SECRET, 'body')).toBe(reference(SECRET, '1750000000', 'body'));
  });

  it('has the header format of the spec', () => {
    expect(sign(SECRET, '{}')).toMatch(/^t=\d{10},v1=[0-9a-f]{64}$/);
  });

  it.each([
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    1e21,
    '',
    ' 1',
    '1 ',
    '+1',
    '-1',
    '1e9',
    '1.0',
    '0x10',
    'now',
  ])('rejects the timestamp %j', (timestamp) => {
    expect(() => sign(SECRET, '{}', timestamp)).toThrow(TypeError);
  });

  it.each([
    ['empty', ''],
    ['with a leading space', ' whsec_abcdef'],
    ['with a trailing newline', 'whsec_abcdef\n'],
    ['undefined', undefined],
    ['a number', 12345],
  ])('rejects a secret that is %s, without showing it', (_name, secret) => {
    let error: unknown;
    try {
      sign(secret as string, '{}', 1);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TypeError);
    if (typeof secret === 'string' && secret.trim() !== '') {
      expect((error as Error).message).not.toContain(secret.trim());
    }
  });
});
