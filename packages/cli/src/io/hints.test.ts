import { describe, expect, test } from 'vitest';
import { answerHint, networkHint } from './hints.js';

const http = 'http://127.0.0.1:3000/webhooks';
const https = 'https://127.0.0.1:3000/webhooks';

describe('networkHint', () => {
  test('says what to check for each connection failure', () => {
    expect(networkHint('ECONNREFUSED', http)).toContain('is the receiver running, and on that port?');
    expect(networkHint('ECONNREFUSED', 'http://localhost:3000/')).toContain('::1');
    expect(networkHint('EPROTO', https)).toContain('try http://127.0.0.1:3000/webhooks');
    expect(networkHint('ERR_SSL_WRONG_VERSION_NUMBER', https)).toContain('does not speak TLS');
    expect(networkHint('ECONNRESET', http)).toContain('if it serves HTTPS, try https://127.0.0.1:3000/webhooks');
    expect(networkHint('ENOTFOUND', 'http://recieverr.local/webhooks')).toContain('recieverr.local does not resolve');
    expect(networkHint('ETIMEDOUT', 'https://example.com/webhooks')).toContain('example.com:443');
    expect(networkHint('DEPTH_ZERO_SELF_SIGNED_CERT', https)).toContain('NODE_EXTRA_CA_CERTS');
    expect(networkHint('HPE_INVALID_CONSTANT', http)).toContain('not HTTP');
    expect(networkHint('EWHATEVER', http)).toBeUndefined();
  });
});

describe('answerHint', () => {
  test('a 404 without a pixhook error code asks about the path; pixhook answers need no hint', () => {
    expect(answerHint({ ok: false, status: 404, ms: 1, body: '<pre>Cannot POST /webhook</pre>' }, http)).toContain(
      'nothing handles POST /webhooks on this server: is the path right?',
    );
    const pixhook = JSON.stringify({ error: { code: 'SIGNATURE_MISMATCH', message: '…' } });
    expect(answerHint({ ok: false, status: 400, ms: 1, body: pixhook }, http)).toBeUndefined();
    expect(answerHint({ ok: true, status: 200, ms: 1, body: '' }, http)).toBeUndefined();
  });

  test("a plain 500 (not pixhook's JSON) points at the server's log; a 502 at the proxy; pixhook's 500 needs none", () => {
    expect(answerHint({ ok: false, status: 500, ms: 1, body: 'Internal Server Error' }, http)).toMatch(
      /no pixhook error code: the server failed before pixhook answered.*check the receiver's log/,
    );
    expect(answerHint({ ok: false, status: 502, ms: 1, body: '<h1>Bad Gateway</h1>' }, http)).toMatch(
      /a proxy or gateway in front of the receiver answered 502/,
    );
    const failed = JSON.stringify({ error: { code: 'HANDLER_FAILED', message: '…' } });
    expect(answerHint({ ok: false, status: 500, ms: 1, body: failed }, http)).toBeUndefined();
  });
});
