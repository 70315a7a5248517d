import { type BodyReader, bodyTimeout, WebhookVerificationError } from '@pixhook/core';

const EMPTY = new Uint8Array(0);

/**
 * A `BodyReader` for a Web `Request`: reads `request.body` as bytes and stops as soon as it holds
 * more than `limit` bytes, cancelling the rest of the stream and rejecting with a 413 that core
 * answers as `PAYLOAD_TOO_LARGE`. When the body has not fully arrived within `timeoutMs`, it drops
 * what it holds, cancels the stream and rejects with `BODY_TIMEOUT`.
 */
export function requestBodyReader(request: Request): BodyReader {
  return async (limit, timeoutMs) => {
    // A locked stream has a reader elsewhere: reading on would get part of the body at best.
    if (request.bodyUsed || request.body?.locked === true) {
      throw new WebhookVerificationError(
        'RAW_BODY_UNAVAILABLE',
        'The request body was already read before pixhook (request.json(), request.text() or a body-parsing middleware), so the signature cannot be checked. Pass the untouched Request to the handler, or hand it request.clone() before reading the body yourself.',
      );
    }
    if (request.body === null) return EMPTY;
    const reader = request.body.getReader();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Rejects at the deadline; cancelling the stream also ends the pending read().
    const deadline =
      timeoutMs === undefined
        ? undefined
        : new Promise<never>((_resolve, reject) => {
            timer = setTimeout(() => {
              reject(bodyTimeout(timeoutMs));
              reader.cancel().catch(() => {});
            }, timeoutMs);
          });
    try {
      return await readAll(reader, limit, deadline);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  };
}

async function readAll(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  limit: number,
  deadline: Promise<never> | undefined,
): Promise<Uint8Array> {
  // The deadline is cleared once the body is in; until then every read races it.
  deadline?.catch(() => {});
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await (deadline ? Promise.race([reader.read(), deadline]) : reader.read());
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > limit) {
      // Do not read or copy what is refused anyway; core answers a reader's 413 as PAYLOAD_TOO_LARGE.
      reader.cancel().catch(() => {});
      throw Object.assign(new Error('pixhook: the request body is larger than the limit.'), { status: 413 });
    }
  }
  return concat(chunks, size);
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
