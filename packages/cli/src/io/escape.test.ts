import { describe, expect, test } from 'vitest';
import { escapeText, safeJson } from './escape.js';

describe('escapeText', () => {
  test('shows every control character as an escape and keeps the rest', () => {
    expect(escapeText('a\x1b[2Jb\x07c\x00\x7f\x9b31m')).toBe('a\\x1b[2Jb\\x07c\\x00\\x7f\\x9b31m');
    expect(escapeText('line\r\nnext\ttab')).toBe('line\\r\\nnext\\ttab');
    expect(escapeText('\u202eevil\u2066\u2028')).toBe('\\u202eevil\\u2066\\u2028');
    expect(escapeText('café ✓ C:\\path 😀')).toBe('café ✓ C:\\path 😀');
    expect(escapeText(undefined)).toBe('undefined');
  });
});

describe('safeJson', () => {
  test('writes terminal controls as \\u escapes; the JSON reads back the same', () => {
    const value = { id: 'a\u001b\u009b\u007f\u202eb', n: 1 };
    const text = safeJson(value, 2);
    expect(text).toContain('"a\\u001b\\u009b\\u007f\\u202eb"');
    expect(JSON.parse(text)).toEqual(value);
  });
});
