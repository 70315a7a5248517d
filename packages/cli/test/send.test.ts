import { writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EVENT_TYPES } from '@pixhook/core';
import { SAMPLE_OBJECTS } from '@pixhook/core/testing';
import { ensureBuilt, run, SECRET } from '@pixhook/test-helpers/cli';
import { failFirst, type Receiver, receiver, slow } from '@pixhook/test-helpers/receivers';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

let good: Receiver;
let failing: Receiver;

beforeAll(async () => {
  ensureBuilt();
  [good, failing] = await Promise.all([receiver('express'), receiver('fastify', failFirst(Number.POSITIVE_INFINITY))]);
});
const servers: Server[] = [];
afterAll(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
  return Promise.all([good?.close(), failing?.close()]);
});

function neverShowsSecret(...outputs: string[]) {
  for (const output of outputs) expect(output).not.toContain(SECRET);
}

describe('pixhook send', () => {
  test('delivers a signed sample event with all four headers; exit 0 and the answer printed', async () => {
    const { code, stdout, stderr } = await run(['send', good.url, '--type', 'image.created']);
    expect(code).toBe(0);
    expect(good.arrivals).toHaveLength(1);
    const [arrival] = good.arrivals;
    expect(arrival?.event.type).toBe('image.created');
    expect(arrival?.event.data.object).toEqual(SAMPLE_OBJECTS['image.created']);
    expect(stdout).toContain(`POST ${good.url}`);
    expect(stdout).toContain(arrival?.event.id);
    expect(stdout).toContain(`delivery ${arrival?.deliveryId}`);
    expect(stdout).toMatch(/← 200 OK in \d+ ms/);
    neverShowsSecret(stdout, stderr);
  });

  test('--json gives status, time and body; --data and --event-id shape the event', async () => {
    const data = join(tmpdir(), `pixhook-cli-data-${process.pid}.json`);
    writeFileSync(data, JSON.stringify({ id: 'img_custom', filename: 'cat.png' }));
    const { code, stdout } = await run([
      'send',
      good.url,
      '--type',
      'image.deleted',
      '--data',
      data,
      '--event-id',
      'evt_cli_fixed',
      '--json',
    ]);
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ ok: true, status: 200, type: 'image.deleted', eventId: 'evt_cli_fixed' });
    expect(result.ms).toBeGreaterThanOrEqual(0);
    const arrival = good.arrivals.at(-1);
    expect(arrival?.event).toMatchObject({ id: 'evt_cli_fixed', data: { object: { id: 'img_custom' } } });
    expect(arrival?.deliveryId).toBe(result.deliveryId);
  });

  test('a failing receiver: exit 1, the status and pixhook error code shown', async () => {
    const { code, stdout } = await run(['send', failing.url, '--type', 'quota.exceeded']);
    expect(code).toBe(1);
    expect(stdout).toContain('500 Internal Server Error HANDLER_FAILED');
    expect(stdout).toContain('the service would retry');
  });

  test('a wrong secret is rejected by the receiver: exit 1 with SIGNATURE_MISMATCH', async () => {
    const { code, stdout, stderr } = await run(['send', good.url, '--type', 'image.created', '--json'], {
      secret: 'whsec_some_other_endpoint',
    });
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toMatchObject({ ok: false, status: 400 });
    expect(stdout).toContain('SIGNATURE_MISMATCH');
    expect(`${stdout}${stderr}`).not.toContain('whsec_some_other_endpoint');
  });

  test('no 2xx within the deadline, or nobody listening: exit 1', async () => {
    const late = await receiver('koa', slow(600));
    try {
      const [timedOut, refused] = await Promise.all([
        run(['send', late.url, '--type', 'image.created', '--deadline', '0.2']),
        run(['send', 'http://127.0.0.1:1/webhooks', '--type', 'image.created', '--json']),
      ]);
      expect(timedOut.code).toBe(1);
      expect(timedOut.stdout).toContain('no answer within 0.2 s');
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, failure: 'network', detail: 'ECONNREFUSED' });
    } finally {
      await late.close();
    }
  });

  test('a failed connection says what to check: nothing listening, https to an http server', async () => {
    const [refused, tls] = await Promise.all([
      run(['send', 'http://127.0.0.1:1/webhooks', '--type', 'image.created']),
      run(['send', good.url.replace('http:', 'https:'), '--type', 'image.created', '--json']),
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('could not reach http://127.0.0.1:1/webhooks: ECONNREFUSED');
    expect(refused.stdout).toContain('hint: nothing accepts connections on 127.0.0.1:1: is the receiver running');
    expect(tls.code).toBe(1);
    const result = JSON.parse(tls.stdout);
    expect(result).toMatchObject({ ok: false, failure: 'network', detail: 'EPROTO' });
    expect(result.hint).toContain(
      `does not speak TLS (https): a local receiver usually serves plain HTTP, try ${good.url}`,
    );
  });

  test("a wrong path: the framework's HTML 404 page summarised in a line, with a hint", async () => {
    const wrong = good.url.replace(/\/webhooks$/, '/webhook');
    const { code, stdout } = await run(['send', wrong, '--type', 'image.created']);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /← 404 Not Found in \d+ ms\nnot JSON \(text\/html; charset=utf-8, \d+ bytes\): Cannot POST \/webhook\n/,
    );
    expect(stdout).toContain('hint: nothing handles POST /webhook on this server: is the path right?');
    expect(stdout).not.toContain('<');
  });

  test('a 5 MiB answer: the first 1 MiB kept, "4,194,304 bytes more" said, the rest not read', async () => {
    const size = 5 * 1_048_576;
    const big = await streaming((res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': size });
      // 64 KiB at a time, as a receiver streaming a large answer does.
      const piece = Buffer.alloc(65_536, 'é'.repeat(32_768));
      let sent = 0;
      const more = () => {
        while (sent < size && res.write(piece)) sent += piece.length;
        if (sent < size) res.once('drain', more);
        else res.end();
      };
      more();
    });
    const [text, json] = await Promise.all([
      run(['send', big.url, '--type', 'image.created']),
      run(['send', big.url, '--type', 'image.created', '--json']),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('4,194,304 bytes more, not read: pixhook reads the first 1 MiB of an answer');
    const result = JSON.parse(json.stdout);
    expect(result).toMatchObject({ ok: true, status: 200, truncated: true, moreBytes: 4_194_304 });
    // Whole characters only: 'é' is two bytes, and 1 MiB holds 524,288 of them.
    expect(result.body).toBe('é'.repeat(524_288));
  });

  test('an endless answer: the send ends with its prefix, and the CLI closes the connection', async () => {
    let closed = 0;
    const endless = await streaming((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"items":[');
      const piece = Buffer.from('"0123456789abcdef",'.repeat(3_000));
      const more = () => {
        while (!res.destroyed && res.write(piece));
        if (!res.destroyed) res.once('drain', more);
      };
      res.on('close', () => closed++);
      more();
    });
    // A deadline far beyond the test's ceiling: only the bound can end this send.
    const result = await run(['send', endless.url, '--type', 'image.created', '--deadline', '3600', '--json']);
    expect(result.code).toBe(0);
    const outcome = JSON.parse(result.stdout);
    expect(outcome).toMatchObject({ ok: true, status: 200, truncated: true });
    expect(outcome.moreBytes).toBeUndefined();
    expect(Buffer.byteLength(outcome.body)).toBe(1_048_576);
    expect(outcome.body.startsWith('{"items":["0123456789abcdef",')).toBe(true);
    await expect.poll(() => closed, { timeout: 15_000 }).toBe(1);

    const text = await run(['send', endless.url, '--type', 'image.created', '--deadline', '3600']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('… more bytes, not read: pixhook reads the first 1 MiB of an answer');
  }, 60_000);

  test('without a secret, or with bad options: exit 2 and a message saying what to do', async () => {
    const [noSecret, noType, badUrl] = await Promise.all([
      run(['send', good.url, '--type', 'image.created'], { secret: null }),
      run(['send', good.url]),
      run(['send', 'localhost:3000', '--type', 'image.created']),
    ]);
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toContain('PIXHOOK_SECRET');
    expect(noType.code).toBe(2);
    expect(noType.stderr).toContain("required option '-t, --type <type>'");
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain('expected an http:// or https:// URL');
  });

  test('--type all sends one delivery of each type, each its own event; exit 0 only if every one got a 2xx', async () => {
    const r = await receiver('koa');
    try {
      const [all, fixed] = await Promise.all([
        run(['send', r.url, '--type', 'all', '--json']),
        run(['send', r.url, '--type', 'all', '--event-id', 'evt_one']),
      ]);
      expect(all.code).toBe(0);
      const result = JSON.parse(all.stdout);
      expect(result.ok).toBe(true);
      expect(result.deliveries.map((d: { type: string; status: number }) => [d.type, d.status])).toEqual(
        EVENT_TYPES.map((type) => [type, 200]),
      );
      expect(r.arrivals.map((a) => a.event.type)).toEqual([...EVENT_TYPES]);
      expect(new Set(r.arrivals.map((a) => a.event.id)).size).toBe(EVENT_TYPES.length);
      expect(r.arrivals.map((a) => a.event.data.object)).toEqual(EVENT_TYPES.map((type) => SAMPLE_OBJECTS[type]));
      expect(fixed.code).toBe(2);
      expect(fixed.stderr).toContain('--type all sends each type with its own sample, event id and delivery id');
    } finally {
      await r.close();
    }
  });

  test('--age and --timestamp sign an earlier delivery: a stale one is refused by the receiver', async () => {
    const t = Math.floor(Date.now() / 1000) - 30;
    const [stale, future, chosen, both] = await Promise.all([
      run(['send', good.url, '--type', 'image.created', '--age', '600']),
      run(['send', good.url, '--type', 'image.created', '--age', '-600', '--json']),
      run(['send', good.url, '--type', 'quota.warned', '--timestamp', String(t), '--event-id', 'evt_cli_t', '--json']),
      run(['send', good.url, '--type', 'image.created', '--age', '1', '--timestamp', String(t)]),
    ]);
    expect(stale.code).toBe(1);
    expect(stale.stdout).toMatch(/signed t=\d+ \(10 min ago\)/);
    expect(stale.stdout).toContain('400 Bad Request TIMESTAMP_OUT_OF_TOLERANCE');
    expect(future.code).toBe(1);
    expect(JSON.parse(future.stdout)).toMatchObject({ status: 400 });
    expect(future.stdout).toContain('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(chosen.code).toBe(0);
    expect(JSON.parse(chosen.stdout)).toMatchObject({ ok: true, timestamp: t });
    const arrival = good.arrivals.find((a) => a.event.id === 'evt_cli_t');
    expect(arrival).toMatchObject({ timestamp: t, event: { created: t } });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('cannot be used with');
  });
});

/** A server that is not a pixhook receiver: it reads the delivery, then answers with `answer`. */
async function streaming(answer: (res: ServerResponse) => void): Promise<{ url: string }> {
  const server: Server = createServer((req, res) => {
    req.resume().on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks` };
}
