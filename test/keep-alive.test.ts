/**
 * The service may send its next delivery on the same keep-alive connection. A rejected request —
 * above all a 413 for a body that is still arriving — must leave that connection usable.
 */
import http from 'node:http';
import { Webhooks } from '@pixhook/core';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import { NODE_SERVERS } from '@pixhook/test-helpers/servers';
import { afterEach, describe, expect, it } from 'vitest';

/** One request on `agent`; also reports which socket carried it. */
function post(agent: http.Agent, port: number, headers: Record<string, string | number>, body: Buffer | string) {
  return new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/webhooks', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.each(NODE_SERVERS)('keep-alive: %s', (_name, start) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((c) => c()));
  });

  it.each([
    ['a chunked body over the limit (413 while it arrives)', { 'transfer-encoding': 'chunked' }, 200_000, 413],
    ['a declared Content-Length over the limit', { 'content-length': 200_000 }, 200_000, 413],
    ['a forged signature', {}, 0, 400],
  ] as const)(
    'after %s, the next delivery on the same connection is processed',
    async (_case, headers, size, status) => {
      const webhooks = new Webhooks({ secret: SECRET, maxBodyBytes: 64 * 1024 });
      let runs = 0;
      webhooks.on('image.created', () => {
        runs++;
      });
      const server = await start(webhooks);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      cleanups.push(server.close, async () => agent.destroy());

      const bad = size > 0 ? Buffer.alloc(size, 0x61) : delivery(undefined, { secret: 'whsec_forger' }).body;
      const first = await post(agent, server.port, { ...headers, 'x-service-signature': 't=1,v1=00' }, bad);
      expect(first.status).toBe(status);
      const good = delivery();
      const second = await post(agent, server.port, good.headers, good.body);
      expect(second.status).toBe(200);
      expect(runs).toBe(1);
    },
  );
});
