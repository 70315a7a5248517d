import { describe, expect, it } from 'vitest';
import { parseSignatureHeader, WebhookVerificationError } from '../index.js';

const HEX = 'ab'.repeat(32);
const HEX2 = 'cd'.repeat(32);

function codeOf(header: string | undefined): string | undefined {
  try {
    parseSignatureHeader(header);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).code;
  }
}

describe('parseSignatureHeader', () => {
  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['blank', '   '],
    ['a tab', '\t'],
  ])('%s → MISSING_SIGNATURE', (_name, header) => {
    expect(codeOf(header)).toBe('MISSING_SIGNATURE');
  });

  it.each([
    ['no t', `v1=${HEX}`],
    ['several t', `t=1,t=2,v1=${HEX}`],
    ['the same t twice', `t=1,v1=${HEX},t=1`],
    ['t with a decimal point', `t=1.5,v1=${HEX}`],
    ['t with a plus sign', `t=+1,v1=${HEX}`],
    ['t negative', `t=-1,v1=${HEX}`],
    ['t in exponent form', `t=1e9,v1=${HEX}`],
    ['t in hex', `t=0x10,v1=${HEX}`],
    ['t empty', `t=,v1=${HEX}`],
    ['t with a space inside', `t= 1,v1=${HEX}`],
    ['t with a trailing letter', `t=1700000000s,v1=${HEX}`],
    ['t with non-ASCII digits', `t=١٢٣,v1=${HEX}`],
    ['no v1', 't=1'],
    ['only a v0', `t=1,v0=${HEX}`],
    ['only an unknown scheme', `t=1,v2=${HEX}`],
    ['an empty v1', 't=1,v1='],
    ['an empty v1 beside a good one', `t=1,v1=${HEX},v1=`],
    ['a part without =', `t=1,v1=${HEX},junk`],
    ['a part with an empty key', `t=1,v1=${HEX},=abc`],
    ['a space around =', `t = 1,v1=${HEX}`],
    ['an upper-case T', `T=1,v1=${HEX}`],
    ['an upper-case V1 only', `t=1,V1=${HEX}`],
    ['semicolons instead of commas', `t=1;v1=${HEX}`],
    ['just a value', HEX],
  ])('%s → MALFORMED_SIGNATURE', (_name, header) => {
    expect(codeOf(header)).toBe('MALFORMED_SIGNATURE');
  });

  it('parses t and v1', () => {
    expect(parseSignatureHeader(`t=1700000000,v1=${HEX}`)).toEqual({
      t: '1700000000',
      timestamp: 1_700_000_000,
      v1: [HEX],
    });
  });

  it('accepts the parts in any order', () => {
    expect(parseSignatureHeader(`v1=${HEX},t=42`)).toEqual({ t: '42', timestamp: 42, v1: [HEX] });
    expect(parseSignatureHeader(`v1=${HEX},t=42,v1=${HEX2}`).v1).toEqual([HEX, HEX2]);
  });

  it('tolerates spaces after (and before) commas', () => {
    expect(parseSignatureHeader(`t=42, v1=${HEX},  v1=${HEX2}`)).toEqual({ t: '42', timestamp: 42, v1: [HEX, HEX2] });
    expect(parseSignatureHeader(` t=42 , v1=${HEX} `).v1).toEqual([HEX]);
  });

  it('keeps every v1 in the order sent', () => {
    expect(parseSignatureHeader(`t=1,v1=${HEX2},v1=${HEX},v1=${HEX2}`).v1).toEqual([HEX2, HEX, HEX2]);
  });

  it('ignores unknown schemes and keeps only v1 values', () => {
    expect(parseSignatureHeader(`v0=${HEX2},t=1,v2=zzz,foo=bar,v1=${HEX}`)).toEqual({
      t: '1',
      timestamp: 1,
      v1: [HEX],
    });
  });

  it('keeps the t text as sent, leading zeros included (it is what was signed)', () => {
    expect(parseSignatureHeader(`t=0001700000000,v1=${HEX}`)).toEqual({
      t: '0001700000000',
      timestamp: 1_700_000_000,
      v1: [HEX],
    });
  });

  it('t=0 is well-formed', () => {
    expect(parseSignatureHeader(`t=0,v1=${HEX}`).timestamp).toBe(0);
  });

  it('does not judge v1 values (a v1 that is not hex simply never matches later)', () => {
    expect(parseSignatureHeader('t=1,v1=not-hex,v1=ABC').v1).toEqual(['not-hex', 'ABC']);
  });

  it('keeps a v1 value that contains "=" whole', () => {
    expect(parseSignatureHeader('t=1,v1=a=b').v1).toEqual(['a=b']);
  });

  it('skips empty parts between commas', () => {
    expect(parseSignatureHeader(`t=1,,v1=${HEX},`).v1).toEqual([HEX]);
  });

  it('says what is wrong and what is expected, and keeps a long junk part short', () => {
    const junk = 'x'.repeat(5000);
    let error: WebhookVerificationError | undefined;
    try {
      parseSignatureHeader(`t=1,v1=${HEX},${junk}`);
    } catch (e) {
      error = e as WebhookVerificationError;
    }
    expect(error?.status).toBe(400);
    expect(error?.message).toContain('t=<unix seconds>,v1=<hex signature>');
    expect(error?.message.length).toBeLessThan(300);
  });
});
