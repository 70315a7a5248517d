/**
 * Memory held for a body follows the bytes that arrived, not the Content-Length a client declares:
 * 300 connections that declare 1 MiB and send two bytes (in two packets) reserved 300 MiB before.
 * Real servers on 127.0.0.1, raw sockets, Buffer memory measured with process.memoryUsage().
 */
import net from 'node:net';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Webhooks } from '@pixhook/core';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import { NODE_SERVERS } from '@pixhook/test-helpers/servers';
import { afterEach, describe, expect, it } from 'vitest';

const CONNECTIONS = 300;
const DECLARED = 1_048_576;
/** One version of each framework is enough to measure memory. */
const SERVERS = NODE_SERVERS.filter(([name]) => ['express@5', 'koa@3', 'fastify@5'].includes(name));

// The garbage collector, without starting Node with --expose-gc.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(SERVERS)('idle bodies: %s', (_name, start) => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it(`${CONNECTIONS} connections declaring 1 MiB and sending two bytes hold kilobytes each`, async () => {
    const webhooks = new Webhooks({ secret: SECRET, maxBodyBytes: DECLARED, bodyTimeoutMs: 20_000 });
    webhooks.onError(() => {});
    const server = await start(webhooks);
    cleanups.push(server.close);
    const { headers } = delivery();
    const lines = Object.entries({ ...headers, host: '127.0.0.1', 'content-length': DECLARED })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    const head = `POST /webhooks HTTP/1.1\r\n${lines}\r\n`;

    const sockets = await Promise.all(
      Array.from(
        { length: CONNECTIONS },
        () =>
          new Promise<net.Socket>((resolve, reject) => {
            const socket = net.connect(server.port, '127.0.0.1', () => resolve(socket));
            socket.on('error', reject);
          }),
      ),
    );
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
    });
    for (const socket of sockets) socket.write(`${head}{`);
    await sleep(500);
    // Free what earlier tests left, so that collecting it cannot hide what this one holds.
    collectGarbage();
    const before = process.memoryUsage().arrayBuffers;
    // The second byte is a second chunk: that is when the whole declared length was allocated.
    for (const socket of sockets) socket.write('"');
    // Time for the server to take 300 reads, even on a busy machine.
    await sleep(1_000);
    const grown = process.memoryUsage().arrayBuffers - before;

    expect(sockets.every((socket) => !socket.destroyed)).toBe(true);
    // Before: CONNECTIONS × 1 MiB. Now at most 16 KiB each, with room for whatever else allocates.
    expect(grown).toBeLessThan(CONNECTIONS * 64 * 1024);
  });
});
