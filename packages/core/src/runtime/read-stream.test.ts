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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('readStream: memory follows the bytes that arrived', () => {
  it('300 bodies declaring 1 MiB and sending two bytes each hold kilobytes each, not the declared length', async () => {
    const streams = Array.from({ length: 300 }, () => new PassThrough());
    const reads = streams.map((s) => readStream(s, 1_048_576, '1048576'));
    const before = process.memoryUsage().arrayBuffers;
    for (const s of streams) s.write(bytes(1));
    await sleep(5);
    for (const s of streams) s.write(bytes(1));
    await sleep(5);
    const grown = process.memoryUsage().arrayBuffers - before;
    // 300 × 1 MiB were reserved before; now at most 300 × 16 KiB.
    expect(grown).toBeLessThan(300 * 64 * 1024);
    for (const s of streams) s.destroy();
    await Promise.allSettled(reads);
  });

  it('grows in steps as chunks arrive and returns exactly the bytes, declared or chunked', async () => {
    const parts = Array.from({ length: 40 }, (_, i) => bytes(10_000 + i, 97 + (i % 26)));
    const expected = Buffer.concat(parts);
    for (const declared of [String(expected.byteLength), undefined]) {
      const stream = new PassThrough();
      const read = readStream(stream, 1_048_576, declared);
      for (const part of parts) stream.write(part);
      stream.end();
      // Buffer#equals: a deep toEqual on 400 KB takes seconds.
      expect(Buffer.from(await read).equals(expected)).toBe(true);
    }
  });

  it('a declared body that arrives whole ends in one buffer of its exact length', async () => {
    const parts = [bytes(70_000), bytes(70_000), bytes(60_000)];
    const body = await readStream(Readable.from(parts), 1_048_576, '200000');
    // No slack and no second copy: the buffer it grew into last is the body.
    expect([body.byteLength, body.byteOffset, body.buffer.byteLength]).toEqual([200_000, 0, 200_000]);
  });
});

describe('readStream: the deadline', () => {
  it('rejects with BODY_TIMEOUT when the body has not arrived in time, then closes the stream', async () => {
    const stream = new PassThrough();
    const started = Date.now();
    const read = readStream(stream, 1000, '10', 100);
    stream.write(bytes(3));
    await expect(read).rejects.toMatchObject({ code: 'BODY_TIMEOUT', status: 408 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    // What still arrives is discarded, for the moment the answer needs; then the stream is closed.
    stream.write(bytes(3));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.readableLength).toBe(0);
    expect(stream.destroyed).toBe(false);
    await sleep(1_100);
    expect(stream.destroyed).toBe(true);
  });

  it('after a 413 discards what arrives until the deadline, and no longer', async () => {
    const stream = new PassThrough();
    // A deadline a busy machine cannot reach between the 413 and the first look.
    const read = readStream(stream, 10, undefined, 1_000);
    stream.write(bytes(11));
    await expect(read).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const trickle = setInterval(() => stream.write(bytes(5)), 10);
    try {
      await sleep(60);
      expect(stream.destroyed).toBe(false);
      expect(stream.readableLength).toBe(0);
      // The trickle never ends: the deadline closes the stream.
      for (let waited = 0; !stream.destroyed && waited < 10_000; waited += 20) await sleep(20);
      expect(stream.destroyed).toBe(true);
    } finally {
      clearInterval(trickle);
    }
  });

  it('a body that ends after a 413 but before the deadline leaves the stream alone', async () => {
    // Not destroyed at its end by itself, so only readStream could have destroyed it.
    const stream = new PassThrough({ autoDestroy: false });
    // A deadline a busy machine cannot reach between the 413 and the body's end.
    const read = readStream(stream, 10, undefined, 1_000);
    stream.write(bytes(11));
    await expect(read).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    stream.end(bytes(5));
    await sleep(1_100);
    expect(stream.destroyed).toBe(false);
  });

  it('a body that arrived in time is not touched at the deadline', async () => {
    const stream = new PassThrough({ autoDestroy: false });
    const read = readStream(stream, 100, undefined, 50);
    stream.end(bytes(4));
    expect((await read).byteLength).toBe(4);
    await sleep(100);
    expect(stream.destroyed).toBe(false);
    expect(stream.listenerCount('data')).toBe(0);
  });
});
