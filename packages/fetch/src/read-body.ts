import { type BodyReader, WebhookVerificationError } from '@pixhook/core';

const EMPTY = new Uint8Array(0);

/**
 * A `BodyReader` for a Web `Request`: reads `request.body` as bytes and stops as soon as it holds
 * more than `limit` bytes, cancelling the rest of the stream and rejecting with a 413 that core
 * answers as `PAYLOAD_TOO_LARGE`.
 */
export function requestBodyReader(request: Request): BodyReader {
  return async (limit) => {
    // A locked stream has a reader elsewhere: reading on would get part of the body at best.
    if (request.bodyUsed || request.body?.locked === true) {
      throw new WebhookVerificationError(
        'RAW_BODY_UNAVAILABLE',
        'The request body was already read before pixhook (request.json(), request.text() or a body-parsing middleware), so the signature cannot be checked. Pass the untouched Request to the handler, or hand it request.clone() before reading the body yourself.',
      );
    }
    if (request.body === null) return EMPTY;
    const reader = request.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
      if (size > limit) {
        // Do not read or copy what is refused anyway; core answers a reader's 413 as PAYLOAD_TOO_LARGE.
        reader.cancel().catch(() => {});
        throw Object.assign(new Error('The request body is larger than the limit.'), { status: 413 });
      }
    }
    return concat(chunks, size);
  };
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
