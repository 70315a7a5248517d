import type { AttemptOutcome } from '../deliver.js';
import { errorCode } from './output.js';

const CERTIFICATE = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function where(url: URL): string {
  return `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
}

/**
 * What to check when a connection failed, from Node's error code: nothing listening, http and
 * https mixed up, a host name that does not resolve, an untrusted certificate.
 *
 * @example
 * networkHint('ECONNREFUSED', 'http://127.0.0.1:3000/webhooks') // 'nothing accepts connections on 127.0.0.1:3000: …'
 */
export function networkHint(detail: string | undefined, receiver: string): string | undefined {
  if (detail === undefined) return undefined;
  const url = new URL(receiver);
  const https = url.protocol === 'https:';
  const other = `${https ? 'http' : 'https'}://${url.host}${url.pathname}`;
  if (detail === 'ECONNREFUSED') {
    const local = url.hostname === 'localhost';
    return `nothing accepts connections on ${where(url)}: is the receiver running, and on that port?${
      local ? ' (localhost may be ::1 while the server listens on 127.0.0.1 only: try the address it prints)' : ''
    }`;
  }
  if (detail === 'EPROTO' || detail.startsWith('ERR_SSL_')) {
    return https
      ? `the server on ${where(url)} does not speak TLS (https): a local receiver usually serves plain HTTP, try ${other}`
      : `the TLS handshake failed on ${where(url)}: check the port and the server's TLS setup`;
  }
  if (detail === 'ECONNRESET') {
    return https
      ? `the server on ${where(url)} closed the connection without answering: check its log (did it crash?)`
      : `the server on ${where(url)} closed the connection without answering: if it serves HTTPS, try ${other}; otherwise check its log (did it crash?)`;
  }
  if (detail === 'ENOTFOUND' || detail === 'EAI_AGAIN') {
    return `the host name ${url.hostname} does not resolve: check the host in the URL (a typo? a name that only resolves inside a container network?)`;
  }
  if (['ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED'].includes(detail)) {
    return `no connection to ${where(url)}: check the host and the port, and any firewall or VPN in between`;
  }
  if (CERTIFICATE.has(detail)) {
    return `the server's TLS certificate is not trusted (${detail}): for a local certificate, point NODE_EXTRA_CA_CERTS at its CA file, or use http:// locally`;
  }
  if (detail.startsWith('HPE_')) {
    return `the answer on ${where(url)} is not HTTP: is another kind of server listening on that port?`;
  }
  return undefined;
}

/**
 * What to check when an answer is not pixhook's: a 404 from the framework (a wrong path), a 405,
 * an authentication layer in front of the receiver. A pixhook receiver's own answers carry an
 * error code, which says it all.
 *
 * @example
 * answerHint({ ok: false, status: 404, ms: 3 }, 'http://127.0.0.1:3000/webhook') // 'nothing handles POST /webhook …'
 */
export function answerHint(outcome: AttemptOutcome, receiver: string): string | undefined {
  const { status } = outcome;
  if (status === undefined || errorCode(outcome.body) !== undefined) return undefined;
  const path = new URL(receiver).pathname;
  if (status === 404) {
    return `nothing handles POST ${path} on this server: is the path right? (a pixhook receiver answers JSON with an error code at its own path)`;
  }
  if (status === 405) return `${path} does not accept POST on this server: is the path right?`;
  if (status === 401 || status === 403) {
    return 'the answer has no pixhook error code: something in front of the receiver (an auth middleware, a proxy) refused the request before pixhook saw it';
  }
  if (status === 502 || status === 503 || status === 504) {
    return `the answer has no pixhook error code: a proxy or gateway in front of the receiver answered ${status} (is the receiver behind it running and reachable?)`;
  }
  if (status >= 500) {
    return "the answer has no pixhook error code: the server failed before pixhook answered (an error in a middleware or route that runs first, a body parser that read the body, the framework's error handler): check the receiver's log (a failing handler answers 500 with HANDLER_FAILED)";
  }
  return undefined;
}

/** The hint for an outcome, whichever kind it is. */
export function outcomeHint(outcome: AttemptOutcome, receiver: string): string | undefined {
  return outcome.failure === 'network' ? networkHint(outcome.detail, receiver) : answerHint(outcome, receiver);
}
