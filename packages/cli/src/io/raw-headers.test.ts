import { describe, expect, test } from 'vitest';
import { headersFromRaw } from './raw-headers.js';

describe('headersFromRaw', () => {
  test('lower-cases names and joins repeated headers in order', () => {
    expect({ ...headersFromRaw(['Content-Type', 'text/html', 'Set-Cookie', 'a=1', 'set-cookie', 'b=2']) }).toEqual({
      'content-type': 'text/html',
      'set-cookie': 'a=1, b=2',
    });
  });

  test('a header named __proto__ or constructor is just a header', () => {
    const headers = headersFromRaw(['__proto__', 'x', 'constructor', 'y', 'toString', 'z']);
    expect(Object.keys(headers)).toEqual(['__proto__', 'constructor', 'tostring']);
    expect(Object.getPrototypeOf(headers)).toBeNull();
  });
});
