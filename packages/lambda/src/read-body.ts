import { type BodyReader, WebhookVerificationError } from '@pixhook/core';

const EMPTY = new Uint8Array(0);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Core answers a reader's error with `status: 413` as PAYLOAD_TOO_LARGE, naming the limit. */
const tooLarge = () => Object.assign(new Error('pixhook: the request body is larger than the limit.'), { status: 413 });

/**
 * A `BodyReader` for a Lambda event's `body`: none (null, absent) is empty, a string is taken as
 * UTF-8, and with `isBase64Encoded` the base64 is decoded to the exact bytes that were sent. The
 * body is already in memory, so there is nothing to wait for; a body over `limit` is refused from
 * its length before anything is encoded or decoded (413).
 */
export function eventBodyReader(body: unknown, isBase64Encoded: unknown): BodyReader {
  return (limit) => {
    if (body === null || body === undefined || body === '') return EMPTY;
    if (typeof body !== 'string') {
      throw new WebhookVerificationError(
        'RAW_BODY_UNAVAILABLE',
        `The event's body is ${typeof body === 'object' ? 'an object' : `a ${typeof body}`}, not the text Lambda received: a body parser (such as middy's http-json-body-parser) ran before pixhook, so the signature cannot be checked. Call the pixhook handler with the untouched event.`,
      );
    }
    if (isBase64Encoded !== true) {
      // Every UTF-16 unit takes at least one byte in UTF-8.
      if (body.length > limit) throw tooLarge();
      return body;
    }
    const padding = body.endsWith('==') ? 2 : body.endsWith('=') ? 1 : 0;
    if (Math.floor((body.length * 3) / 4) - padding > limit) throw tooLarge();
    if (body.length % 4 !== 0 || !BASE64.test(body)) {
      throw new WebhookVerificationError(
        'BODY_UNREADABLE',
        'The event is marked isBase64Encoded but its body is not base64, so the bytes that were signed cannot be recovered. Pass the event to the handler as Lambda delivered it.',
      );
    }
    return Buffer.from(body, 'base64');
  };
}
