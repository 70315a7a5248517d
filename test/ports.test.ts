// freePort(): a port a test hands to another process (a README block, redis-server, Postgres) that
// no outgoing connection can take before that process binds it.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '@pixhook/test-helpers/ports';
import { describe, expect, it } from 'vitest';

describe('freePort', () => {
  it("gives ports below the kernel's ephemeral range, which outgoing connections draw their source ports from", async () => {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) expect(port).toBeLessThan(low as number);
    // Never the same port twice in one process.
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('gives a port that a server listening on every interface can bind, as a README block does', async () => {
    const port = await freePort();
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
