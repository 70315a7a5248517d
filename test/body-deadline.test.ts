/**
 * The body deadline (`bodyTimeoutMs`) on real servers, from a raw socket: a body trickled slower
 * than the deadline gets `408 BODY_TIMEOUT` and its connection closed at about the deadline; an
 * endless chunked body is discarded after its 413 only until the deadline; a body refused by its
 * Content-Length closes the connection at once; a body that arrived in time leaves its keep-alive
 * connection open past the deadline.
 */
import net from 'node:net';
import { Webhooks } from '@pixhook/core';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import { NODE_SERVERS } from '@pixhook/test-helpers/servers';
import { describe, it, type TestContext } from 'vitest';

const DEADLINE_MS = 300;
/** For the tests that tell "at once" from "at the deadline": room for a busy machine between them. */
const LONG_DEADLINE_MS = 1_500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw connection: what it received, when it first received something, and when it closed. */
function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  const started = Date.now();
  const state = { text: '', answeredAfter: Number.POSITIVE_INFINITY, closedAfter: Number.POSITIVE_INFINITY };
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    if (state.text === '') state.answeredAfter = Date.now() - started;
    state.text += chunk;
  });
  // A reset after the answer is one way for a server to close; the test looks at what arrived.
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) =>
    socket.on('close', () => {
      state.closedAfter = Date.now() - started;
      resolve();
    }),
  );
  /** Waits until the connection closed, at most `ms`. */
  const closedWithin = (ms: number) => Promise.race([closed, sleep(ms)]);
  return { socket, state, closedWithin };
}

function head(headers: Record<string, string | number>): string {
  const lines = Object.entries({ host: '127.0.0.1', ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
  return `POST /webhooks HTTP/1.1\r\n${lines.join('')}\r\n`;
}

// Concurrent: every test has its own server and connection, and waits on timers, not the CPU; each
// test's margins are a busy machine's, so running them together is that machine. Each test cleans up
// what it made, in reverse order, when it ends.
function testCleanups(onTestFinished: TestContext['onTestFinished']) {
  const list: (() => void | Promise<void>)[] = [];
  onTestFinished(async () => {
    for (const cleanup of list.splice(0).reverse()) await cleanup();
  });
  return list;
}

describe.concurrent.each(NODE_SERVERS)('body deadline: %s', (_name, start) => {
  async function server(
    cleanups: (() => void | Promise<void>)[],
    options: { maxBodyBytes?: number; bodyTimeoutMs?: number } = {},
  ) {
    const webhooks = new Webhooks({ secret: SECRET, bodyTimeoutMs: DEADLINE_MS, ...options });
    const runs: string[] = [];
    webhooks.onAny((event) => void runs.push(event.id));
    webhooks.onError(() => {});
    const started = await start(webhooks);
    cleanups.push(started.close);
    return { port: started.port, runs };
  }

  it('a trickled body gets 408 BODY_TIMEOUT with connection: close, and the connection closes', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = testCleanups(onTestFinished);
    const { port, runs } = await server(cleanups);
    const { socket, state, closedWithin } = connect(port);
    const d = delivery();
    socket.write(head({ ...d.headers, 'content-length': Buffer.byteLength(d.body) }));
    let sent = 0;
    const trickle = setInterval(() => {
      if (!socket.destroyed && sent < d.body.length - 1) socket.write(d.body[sent++] as string);
    }, 40);
    cleanups.push(
      () => clearInterval(trickle),
      () => void socket.destroy(),
    );
    await closedWithin(10_000);

    expect(state.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(state.text.toLowerCase()).toContain('connection: close');
    expect(state.text).toContain('"code":"BODY_TIMEOUT"');
    expect(state.answeredAfter).toBeGreaterThanOrEqual(DEADLINE_MS - 20);
    // At the deadline, not once the trickled body is whole (it would take 40 ms a byte); the margin
    // is a busy machine's.
    expect(state.answeredAfter).toBeLessThan(DEADLINE_MS + 3_000);
    // Closed right after the answer, long before Node's own requestTimeout (300 s).
    expect(state.closedAfter).toBeLessThan(DEADLINE_MS + 5_000);
    expect(runs).toEqual([]);
  });

  it('an endless chunked body: 413 at once, discarded after it only until the deadline, then closed', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = testCleanups(onTestFinished);
    // A deadline long enough that "at once" cannot be confused with it on a busy machine.
    const { port } = await server(cleanups, { maxBodyBytes: 1024, bodyTimeoutMs: LONG_DEADLINE_MS });
    const { socket, state, closedWithin } = connect(port);
    const d = delivery();
    socket.write(head({ ...d.headers, 'transfer-encoding': 'chunked' }));
    socket.write(`800\r\n${'a'.repeat(0x800)}\r\n`);
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write(`a\r\n${'b'.repeat(10)}\r\n`);
    }, 30);
    cleanups.push(
      () => clearInterval(trickle),
      () => void socket.destroy(),
    );
    await closedWithin(10_000);

    expect(state.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(state.text).toContain('"code":"PAYLOAD_TOO_LARGE"');
    expect(state.answeredAfter).toBeLessThan(LONG_DEADLINE_MS);
    // The trickle never ends: closing at all is the deadline's doing; the margin is a busy machine's.
    expect(state.closedAfter).toBeGreaterThanOrEqual(LONG_DEADLINE_MS - 20);
    expect(state.closedAfter).toBeLessThan(LONG_DEADLINE_MS + 5_000);
  });

  it('a body refused by its Content-Length: 413 at once with connection: close, and a trickled rest is not read', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = testCleanups(onTestFinished);
    const { port } = await server(cleanups, { maxBodyBytes: 1024, bodyTimeoutMs: LONG_DEADLINE_MS });
    const { socket, state, closedWithin } = connect(port);
    const d = delivery();
    socket.write(head({ ...d.headers, 'content-length': 1_000_000 }));
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write('x'.repeat(10));
    }, 30);
    cleanups.push(
      () => clearInterval(trickle),
      () => void socket.destroy(),
    );
    await closedWithin(10_000);

    expect(state.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(state.text.toLowerCase()).toContain('connection: close');
    // At once: before the body deadline, which the refused body's connection does not wait for.
    expect(state.answeredAfter).toBeLessThan(LONG_DEADLINE_MS);
    expect(state.closedAfter).toBeLessThan(LONG_DEADLINE_MS);
  });

  it('one budget per delivery: a slow body plus a hung handler is answered when deliveryTimeoutMs ends', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = testCleanups(onTestFinished);
    const budget = 1_200;
    const webhooks = new Webhooks({
      secret: SECRET,
      bodyTimeoutMs: 3_000,
      handlerTimeoutMs: 3_000,
      deliveryTimeoutMs: budget,
    });
    webhooks.onAny(() => new Promise<void>(() => {}));
    webhooks.onError(() => {});
    const started = await start(webhooks);
    cleanups.push(started.close);
    const { socket, state, closedWithin } = connect(started.port);
    cleanups.push(() => void socket.destroy());
    const d = delivery();
    socket.write(head({ ...d.headers, 'content-length': Buffer.byteLength(d.body) }) + d.body.slice(0, 10));
    // The rest of the body comes 600 ms later: before, the handler deadline then started afresh,
    // and the answer came at 600 ms + handlerTimeoutMs.
    const rest = setTimeout(() => socket.write(d.body.slice(10)), 600);
    cleanups.push(() => clearTimeout(rest));
    for (let waited = 0; state.text === '' && waited < 5_000; waited += 20) await sleep(20);
    await closedWithin(0);

    expect(state.text).toMatch(/^HTTP\/1\.1 503 /);
    expect(state.text).toContain('"code":"HANDLER_TIMEOUT"');
    expect(state.answeredAfter).toBeGreaterThanOrEqual(budget - 30);
    // Not 600 ms + handlerTimeoutMs (3.6 s): the margin is a busy machine's.
    expect(state.answeredAfter).toBeLessThan(budget + 2_000);
  });

  it('a body that arrived in time leaves its keep-alive connection open past the deadline', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = testCleanups(onTestFinished);
    const { port, runs } = await server(cleanups);
    const { socket, state } = connect(port);
    cleanups.push(() => void socket.destroy());
    const answers = () => state.text.match(/HTTP\/1\.1 200 /g)?.length ?? 0;
    const send = async (count: number) => {
      const d = delivery();
      socket.write(head({ ...d.headers, 'content-length': Buffer.byteLength(d.body) }) + d.body);
      for (let waited = 0; answers() < count && waited < 10_000; waited += 10) await sleep(10);
    };
    await send(1);
    await sleep(DEADLINE_MS * 2);
    expect(socket.destroyed).toBe(false);
    await send(2);
    expect(answers()).toBe(2);
    expect(runs).toHaveLength(2);
    expect(state.closedAfter).toBe(Number.POSITIVE_INFINITY);
  });
});
