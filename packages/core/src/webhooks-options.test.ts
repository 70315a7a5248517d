import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type IdempotencyStore, MemoryStore, Webhooks, type WebhooksOptions } from './index.js';

const SECRET = 'whsec_options_test_7e6d5c';

/** The error `new Webhooks(options)` throws, or undefined. */
function buildError(options: unknown): Error | undefined {
  try {
    new Webhooks(options as WebhooksOptions);
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

const store: IdempotencyStore = {
  claim: async () => 'claimed',
  complete: async () => {},
  release: async () => {},
};

describe('new Webhooks(options) validation', () => {
  it.each([
    ['no options', undefined, /options object/],
    ['null options', null, /options object/],
    ['a string as options', SECRET, /options object/],
    ['no secret', {}, /secret is missing.*SIGNING_SECRET/],
    ['secret undefined (an unset variable)', { secret: undefined }, /secret is missing/],
    ['secret null', { secret: null }, /secret is missing/],
    ['secret a number', { secret: 1234 }, /secret must be a string/],
    ['an empty secret', { secret: '' }, /secret is empty/],
    ['a leading space', { secret: ` ${SECRET}` }, /leading or trailing white space/],
    ['a trailing space', { secret: `${SECRET} ` }, /leading or trailing white space/],
    ['a trailing newline', { secret: `${SECRET}\n` }, /leading or trailing white space/],
    ['a trailing CRLF', { secret: `${SECRET}\r\n` }, /leading or trailing white space/],
    ['a leading tab', { secret: `\t${SECRET}` }, /leading or trailing white space/],
    ['only white space', { secret: '   ' }, /white space/],
    ['an empty array', { secret: [] }, /empty array/],
    ['an array with an empty entry', { secret: [SECRET, ''] }, /secret\[1\] is empty/],
    ['an array with an undefined entry', { secret: [SECRET, undefined] }, /secret\[1\] is missing/],
    ['an array with a padded entry', { secret: [` ${SECRET}x`, SECRET] }, /secret\[0\].*white space/],
    ['an array with a number', { secret: [SECRET, 7] }, /secret\[1\] must be a string/],
    ['tolerance 0', { secret: SECRET, tolerance: 0 }, /tolerance must be a positive number/],
    ['tolerance -1', { secret: SECRET, tolerance: -1 }, /tolerance/],
    ['tolerance NaN', { secret: SECRET, tolerance: Number.NaN }, /tolerance/],
    ['tolerance Infinity', { secret: SECRET, tolerance: Number.POSITIVE_INFINITY }, /tolerance/],
    ["tolerance '300'", { secret: SECRET, tolerance: '300' }, /tolerance/],
    ['tolerance true', { secret: SECRET, tolerance: true }, /tolerance/],
    ['maxBodyBytes 0', { secret: SECRET, maxBodyBytes: 0 }, /maxBodyBytes must be a positive whole number/],
    ['maxBodyBytes -1', { secret: SECRET, maxBodyBytes: -1 }, /maxBodyBytes/],
    ['maxBodyBytes 1.5', { secret: SECRET, maxBodyBytes: 1.5 }, /maxBodyBytes/],
    ['maxBodyBytes NaN', { secret: SECRET, maxBodyBytes: Number.NaN }, /maxBodyBytes/],
    ['maxBodyBytes Infinity', { secret: SECRET, maxBodyBytes: Number.POSITIVE_INFINITY }, /maxBodyBytes/],
    ["maxBodyBytes '1024'", { secret: SECRET, maxBodyBytes: '1024' }, /maxBodyBytes/],
    ['a store without methods', { secret: SECRET, store: {} }, /store must implement claim\(\), complete\(\)/],
    ['a store missing release', { secret: SECRET, store: { claim() {}, complete() {} } }, /store must implement/],
    ['store true', { secret: SECRET, store: true }, /store must implement/],
    ['store null', { secret: SECRET, store: null }, /store must implement/],
    ['tolerance null', { secret: SECRET, tolerance: null }, /tolerance must be a positive number/],
    ['maxBodyBytes null', { secret: SECRET, maxBodyBytes: null }, /maxBodyBytes/],
    ['now null', { secret: SECRET, now: null }, /now must be a function/],
    ['now not a function', { secret: SECRET, now: 5 }, /now must be a function/],
    ['a misspelled option', { secret: SECRET, tolerence: 300 }, /no option "tolerence"\. Did you mean "tolerance"\?/],
    ['a misspelled camel case', { secret: SECRET, maxbodybytes: 10 }, /Did you mean "maxBodyBytes"\?/],
    ['secrets for secret', { secret: SECRET, secrets: [SECRET] }, /Did you mean "secret"\?/],
    ['an unrelated option', { secret: SECRET, port: 3000 }, /no option "port"\. Options: secret, tolerance/],
    ["tolerance '300' names the type", { secret: SECRET, tolerance: '300' }, /got the string "300"/],
    ['tolerance an object names the type', { secret: SECRET, tolerance: {} }, /got an object/],
    ['maxBodyBytes a string names the type', { secret: SECRET, maxBodyBytes: '1mb' }, /got a string of 3 characters/],
    ['bodyTimeoutMs 0', { secret: SECRET, bodyTimeoutMs: 0 }, /bodyTimeoutMs must be a positive whole number/],
    ['bodyTimeoutMs true', { secret: SECRET, bodyTimeoutMs: true }, /bodyTimeoutMs.*got a boolean/],
    ['handlerTimeoutMs -5', { secret: SECRET, handlerTimeoutMs: -5 }, /handlerTimeoutMs.*got the number -5/],
    ['handlerTimeoutMs 1.5', { secret: SECRET, handlerTimeoutMs: 1.5 }, /handlerTimeoutMs/],
  ])('%s → TypeError', (_name, options, message) => {
    const error = buildError(options);
    expect(error).toBeInstanceOf(TypeError);
    expect(error?.message).toMatch(message);
  });

  it.each([
    ['a secret', { secret: SECRET }],
    ['a rotation list', { secret: [SECRET, 'whsec_old'] }],
    ['tolerance false', { secret: SECRET, tolerance: false }],
    ['a fractional tolerance', { secret: SECRET, tolerance: 0.5 }],
    ['tolerance undefined', { secret: SECRET, tolerance: undefined }],
    ['store false', { secret: SECRET, store: false }],
    ['a custom store', { secret: SECRET, store }],
    ['a MemoryStore', { secret: SECRET, store: new MemoryStore({ maxEntries: 5 }) }],
    ['maxBodyBytes 1', { secret: SECRET, maxBodyBytes: 1 }],
    ['deadlines off', { secret: SECRET, bodyTimeoutMs: false, handlerTimeoutMs: false }],
    ['deadlines set', { secret: SECRET, bodyTimeoutMs: 1000, handlerTimeoutMs: 9000 }],
    ['options left undefined', { secret: SECRET, store: undefined, now: undefined, bodyTimeoutMs: undefined }],
    ['a secret with inner spaces', { secret: 'my secret phrase' }],
  ])('accepts %s', (_name, options) => {
    expect(buildError(options)).toBeUndefined();
  });

  it('exposes maxBodyBytes, 1 MiB by default', () => {
    expect(new Webhooks({ secret: SECRET }).maxBodyBytes).toBe(1_048_576);
    expect(new Webhooks({ secret: SECRET, maxBodyBytes: 2048 }).maxBodyBytes).toBe(2048);
  });

  it('never shows a secret when the instance is logged, inspected or serialised', () => {
    const webhooks = new Webhooks({ secret: [SECRET, 'whsec_rotated_out_42'], tolerance: 60 });
    const shown = [
      inspect(webhooks, { depth: 5, showHidden: false }),
      JSON.stringify(webhooks),
      Object.keys(webhooks).join(),
    ];
    for (const text of shown) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('whsec_rotated_out_42');
    }
    expect(shown[0]).toBe('Webhooks { secrets: 2 (hidden), tolerance: 60, maxBodyBytes: 1048576, store: MemoryStore }');
  });

  it('never puts a secret in an error message', () => {
    const secrets = ['whsec_Very$ecret123', 'hunter2-but-longer'];
    const bad: unknown[] = [
      { secret: ` ${secrets[0]}` },
      { secret: `${secrets[0]}\n` },
      { secret: [secrets[1], ` ${secrets[0]}`] },
      { secret: [secrets[0], ''] },
      { secret: [secrets[0], undefined] },
      { secret: secrets[0], tolerance: -1 },
      { secret: secrets[0], maxBodyBytes: 0 },
      { secret: [secrets[0], secrets[1]], store: {} },
      { secret: secrets[0], now: 'x' },
      // A secret passed to the wrong option is not echoed back.
      { secret: secrets[0], tolerance: secrets[1] },
      { secret: secrets[0], maxBodyBytes: secrets[0] },
    ];
    for (const options of bad) {
      const error = buildError(options);
      expect(error).toBeInstanceOf(TypeError);
      for (const secret of secrets) {
        expect(error?.message).not.toContain(secret);
        expect(String(error?.stack)).not.toContain(secret);
      }
    }
  });
});
