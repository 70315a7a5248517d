import { describe, expect, test } from 'vitest';
import { DEFAULT_MAX_ATTEMPTS, formatDuration, RETRY_DELAYS_SECONDS, retryDelays } from './schedule.js';

describe('the retry schedule', () => {
  test('is the spec’s six delays between seven attempts', () => {
    expect(RETRY_DELAYS_SECONDS).toEqual([60, 300, 1_800, 7_200, 21_600, 86_400]);
    expect(DEFAULT_MAX_ATTEMPTS).toBe(7);
    expect(retryDelays()).toEqual(RETRY_DELAYS_SECONDS);
  });

  test('fewer attempts use the first delays; more repeat the last', () => {
    expect(retryDelays(1)).toEqual([]);
    expect(retryDelays(3)).toEqual([60, 300]);
    expect(retryDelays(9)).toEqual([60, 300, 1_800, 7_200, 21_600, 86_400, 86_400, 86_400]);
  });
});

describe('formatDuration', () => {
  test.each([
    [0, '0 ms'],
    [16.7, '17 ms'],
    [4_200, '4.2 s'],
    [32_600, '32.6 s'],
    [60_000, '1 min'],
    [299_000, '4 min 59 s'],
    [7_200_000, '2 h'],
    [86_400_000, '24 h'],
    [117_360_000, '32 h 36 min'],
    [3 * 86_400_000 + 7_200_000, '3 d 2 h'],
  ])('%d ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
