import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readStream } from './read-stream.js';

const bytes = (n: number, fill = 97) => Buffer.alloc(n, fill);

describe('readStream', () => {
  it('joins several chunks into the exact bytes, with and without a declared length', async () => {
    const parts = [bytes(3, 97), bytes(5, 98), bytes(2, 99)];
    const expected = Buffer.concat(parts);
    expect(Buffer.from(await readStream(Readable.from(parts), 100, '10'))).toEqual(expected);
    expect(Buffer.from(await readStream(Readable.from(parts), 100))).toEqual(expected);
  });

  it('returns a one-chunk body as it is, and an empty body as zero bytes', async () => {
    const only = bytes(8);
    expect(await readStream(Readable.from([only]), 100, '8')).toBe(only);
    expect((await readStream(Readable.from([]), 100)).byteLength).toBe(0);
  });

  it('rejects a declared length over the limit before reading, and stops reading past the limit', async () => {
    await expect(readStream(Readable.from([bytes(1)]), 10, '11')).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const stream = new PassThrough();
    const read = readStream(stream, 10);
    stream.write(bytes(6));
    stream.write(bytes(6));
    await expect(read).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
    // The rest is discarded as it arrives (keeping the connection usable), never buffered.
    expect(stream.readableFlowing).toBe(true);
    stream.write(bytes(64 * 1024));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.readableLength).toBe(0);
    expect(stream.listenerCount('data')).toBe(0);
  });

  it('rejects a body shorter than its Content-Length, and a stream that fails or closes mid-body', async () => {
    await expect(readStream(Readable.from([bytes(4)]), 100, '5')).rejects.toThrow(/shorter than its Content-Length/);
    const failing = new PassThrough();
    const failed = readStream(failing, 100);
    failing.write(bytes(2));
    failing.destroy(new Error('socket hang up'));
    await expect(failed).rejects.toThrow('socket hang up');
    const closing = new PassThrough();
    const closed = readStream(closing, 100);
    closing.write(bytes(2));
    closing.destroy();
    await expect(closed).rejects.toThrow(/closed before its end/);
  });
});
