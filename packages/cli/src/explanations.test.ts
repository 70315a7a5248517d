import { ERROR_STATUS } from '@pixhook/core';
import { describe, expect, test } from 'vitest';
import { explainCode } from './explanations.js';

/** Codes told to onError only: a receiver never answers them. */
const NEVER_ANSWERED = [
  'DUPLICATE_WINDOW_SHORTENED',
  'JOB_STALLED',
  'CLAIM_RELEASED',
  'ENDPOINT_AT_RISK',
  'ARCHIVE_FAILED',
  'SCHEMA_MISMATCH',
  'STALE_EVENT',
];

describe('explainCode', () => {
  test('explains every code a pixhook receiver answers with', () => {
    const answered = Object.keys(ERROR_STATUS).filter((code) => !NEVER_ANSWERED.includes(code));
    const missing = answered.filter((code) => explainCode(code) === undefined);
    expect(missing).toEqual([]);
  });

  test('says nothing for codes that are not answers, nor for text that is not a code', () => {
    for (const code of [...NEVER_ANSWERED, 'toString', '__proto__', 'NOT_A_CODE', undefined]) {
      expect(explainCode(code)).toBeUndefined();
    }
  });

  test('a signature mismatch points at the secret and at a re-serialising body parser', () => {
    expect(explainCode('SIGNATURE_MISMATCH')).toMatch(/different secret/);
    expect(explainCode('SIGNATURE_MISMATCH')).toMatch(/re-serialising/);
  });
});
