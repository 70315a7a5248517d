import { describe, expect, test } from 'vitest';
import { UsageError } from './errors.js';
import { describeRedisError, parseRedisUrl, queueName, RedisTimeoutError } from './redis.js';

function failure(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

describe('parseRedisUrl', () => {
  test.each([
    ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379', '127.0.0.1:6379'],
    ['redis://localhost', 'redis://localhost', 'localhost:6379'],
    ['redis://:s3cret@127.0.0.1:6380/2', 'redis://:***@127.0.0.1:6380/2', '127.0.0.1:6380'],
    [
      'rediss://admin:s3cret@cache.example.com:6380',
      'rediss://admin:***@cache.example.com:6380',
      'cache.example.com:6380',
    ],
    ['redis://admin@cache:6379', 'redis://admin@cache:6379', 'cache:6379'],
    ['redis://cache:6379/0?password=s3cret', 'redis://cache:6379/0?***', 'cache:6379'],
  ])('%s is shown as %s', (value, shown, address) => {
    const url = parseRedisUrl(value);
    expect(url).toMatchObject({ href: value, shown, address });
    expect(url.shown).not.toContain('s3cret');
  });

  test('keeps the password, as given and decoded, to scrub it from messages', () => {
    expect(parseRedisUrl('redis://:p%40ss@h:1').secrets).toEqual(['p%40ss', 'p@ss']);
    expect(parseRedisUrl('redis://h:1').secrets).toEqual([]);
  });

  test.each([
    ['not a URL', ':s3cret@127.0.0.1:6379', /is not a URL/],
    ['another protocol', 'http://:s3cret@127.0.0.1:6379', /must be a redis:\/\/ or rediss:\/\/ URL, not http:/],
  ])('refuses %s without quoting it', (_name, value, message) => {
    const refuse = () => parseRedisUrl(value);
    expect(refuse).toThrow(UsageError);
    expect(refuse).toThrow(message);
    try {
      refuse();
    } catch (error) {
      expect((error as Error).message).not.toContain('s3cret');
    }
  });
});

describe('describeRedisError', () => {
  const url = parseRedisUrl('redis://:s3cret@127.0.0.1:6390');

  test('names the masked URL and what to check, for each kind of failure', () => {
    expect(describeRedisError(failure('connect ECONNREFUSED 127.0.0.1:6390', 'ECONNREFUSED'), url)).toBe(
      'Cannot reach Redis at redis://:***@127.0.0.1:6390: nothing accepts connections on 127.0.0.1:6390 (connect ECONNREFUSED 127.0.0.1:6390). Is Redis running there? Check --redis (or REDIS_URL).',
    );
    expect(describeRedisError(failure('getaddrinfo ENOTFOUND cache', 'ENOTFOUND'), url)).toMatch(
      /^Cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:6390: the host name does not resolve/,
    );
    expect(describeRedisError(failure('connect EHOSTUNREACH', 'EHOSTUNREACH'), url)).toMatch(/firewall or VPN/);
    expect(describeRedisError(failure('WRONGPASS invalid username-password pair'), url)).toMatch(
      /refused the credentials .*check the user and password/,
    );
    expect(describeRedisError(new RedisTimeoutError(), url)).toBe(
      'Redis at redis://:***@127.0.0.1:6390 did not answer within 3 s. Is it overloaded, or is something other than Redis listening on 127.0.0.1:6390?',
    );
    expect(describeRedisError(failure('Command timed out'), url)).toMatch(
      /did not answer within 3 s \(Command timed out\)/,
    );
    expect(describeRedisError(failure('ERR unknown command'), url)).toBe(
      'Redis at redis://:***@127.0.0.1:6390 failed: ERR unknown command',
    );
  });

  test("scrubs the password from the driver's message", () => {
    expect(describeRedisError(failure('AUTH s3cret failed'), url)).not.toContain('s3cret');
  });
});

describe('queueName', () => {
  test("takes a non-empty name without ':'", () => {
    expect(queueName('pixhook-webhooks')).toBe('pixhook-webhooks');
    expect(() => queueName('')).toThrow(/non-empty name without ':'/);
    expect(() => queueName('a:b')).toThrow(/non-empty name without ':'/);
  });
});
