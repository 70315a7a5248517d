import { describe, expect, test } from 'vitest';
import { UsageError } from './errors.js';
import { describePostgresError, errorCode, PostgresTimeoutError, parsePostgresUrl, scrub } from './postgres.js';

function failure(message: string, code?: string, cause?: unknown): Error {
  return Object.assign(
    new Error(message, cause === undefined ? undefined : { cause }),
    code === undefined ? {} : { code },
  );
}

describe('parsePostgresUrl', () => {
  test.each([
    ['postgres://127.0.0.1:5432/app', 'postgres://127.0.0.1:5432/app', '127.0.0.1:5432'],
    ['postgresql://db/app', 'postgresql://db/app', 'db:5432'],
    ['postgres://app:s3cret@db.internal:6432/app', 'postgres://app:***@db.internal:6432/app', 'db.internal:6432'],
    ['postgres://app@db/app', 'postgres://app@db/app', 'db:5432'],
    ['postgres://db/app?password=s3cret&sslmode=require', 'postgres://db/app?***', 'db:5432'],
  ])('%s is shown as %s', (value, shown, address) => {
    const url = parsePostgresUrl(value);
    expect(url).toMatchObject({ href: value, shown, address });
    expect(url.shown).not.toContain('s3cret');
  });

  test('keeps the password, as given, decoded and from the query, to scrub it from messages', () => {
    expect(parsePostgresUrl('postgres://u:p%40ss@h/db').secrets).toEqual(['p%40ss', 'p@ss']);
    expect(parsePostgresUrl('postgres://h/db?password=s3cret').secrets).toEqual(['s3cret']);
    expect(parsePostgresUrl('postgres://h/db').secrets).toEqual([]);
  });

  test.each([
    ['not a URL', ':s3cret@127.0.0.1:5432/app', /is not a URL/],
    [
      'another protocol',
      'mysql://app:s3cret@127.0.0.1/app',
      /must be a postgres:\/\/ or postgresql:\/\/ URL, not mysql:/,
    ],
  ])('refuses %s without quoting it', (_name, value, message) => {
    const refuse = () => parsePostgresUrl(value);
    expect(refuse).toThrow(UsageError);
    expect(refuse).toThrow(message);
    expect(() => refuse()).not.toThrow(/s3cret/);
  });
});

describe('describePostgresError', () => {
  const url = parsePostgresUrl('postgres://app:s3cret@db:5432/app');

  test.each([
    [
      failure('connect ECONNREFUSED 10.0.0.1:5432', 'ECONNREFUSED'),
      'Cannot reach Postgres at postgres://app:***@db:5432/app: nothing accepts connections on db:5432',
    ],
    [failure('getaddrinfo ENOTFOUND db', 'ENOTFOUND'), 'the host name does not resolve'],
    [failure('password authentication failed for user "app"', '28P01'), 'refused the credentials'],
    [failure('database "app" does not exist', '3D000'), "the database is the URL's path"],
    [new PostgresTimeoutError(), 'did not answer within 5 s.'],
    [failure('timeout expired'), 'did not answer within 5 s (timeout expired)'],
    [failure('pixhook: explained', undefined, failure('x', 'ECONNREFUSED')), 'nothing accepts connections'],
  ])('%s', (error, expected) => {
    const text = describePostgresError(error, url);
    expect(text).toContain(expected);
    expect(text).not.toContain('s3cret');
  });

  test('a driver message that quotes the password or a URL with one is scrubbed', () => {
    const text = describePostgresError(failure('bad s3cret in postgres://x:other@h/db'), url);
    expect(text).toBe('Postgres at postgres://app:***@db:5432/app failed: bad *** in postgres://x:***@h/db');
    expect(scrub('a s3cret b', ['s3cret'])).toBe('a *** b');
    expect(errorCode(failure('x', undefined, { code: '42P01' }))).toBe('42P01');
  });
});
