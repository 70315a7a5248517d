import { once } from 'node:events';
import { createServer } from 'node:net';
import { type Dashboard, startDashboard } from '@pixhook/dashboard';
import { afterEach, describe, expect, test } from 'vitest';

/**
 * `startDashboard()` from code: the options `pixhook dashboard` passes, checked by the dashboard
 * itself for a caller that is not the CLI.
 */

const running: Dashboard[] = [];
afterEach(async () => {
  for (const dashboard of running.splice(0)) await dashboard.close();
});

async function started(options: Parameters<typeof startDashboard>[0]): Promise<Dashboard> {
  const dashboard = await startDashboard(options);
  running.push(dashboard);
  return dashboard;
}

describe('startDashboard', () => {
  test('listens on 127.0.0.1 (port 0: a free one) and starts with the secret and the URL given, never showing the secret', async () => {
    const dashboard = await started({ port: 0, secret: 'whsec_from_code_1f2e', url: 'http://localhost:3000/webhooks' });
    expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(dashboard.inspectorUrl).toBe(`${dashboard.url}inspect`);
    const response = await fetch(`${dashboard.url}api/state`);
    expect(response.status).toBe(200);
    const state = await response.text();
    expect(JSON.parse(state)).toMatchObject({
      endpoint: { url: 'http://localhost:3000/webhooks', secretSet: true },
    });
    expect(state).not.toContain('whsec_from_code_1f2e');
  });

  test('refuses a bad port, a secret with white space (without quoting it) and a URL that is not http(s), before listening', async () => {
    await expect(startDashboard({ port: 70_000 })).rejects.toThrow(
      /^pixhook: port must be a whole number from 0 to 65535/,
    );
    await expect(startDashboard({ port: 1.5 })).rejects.toThrow(TypeError);
    const spaced = startDashboard({ port: 0, secret: ' whsec_spaced_from_code\n' });
    await expect(spaced).rejects.toThrow(/^pixhook: The signing secret: .*white space/);
    await expect(spaced).rejects.not.toThrow(/whsec_spaced_from_code/);
    await expect(startDashboard({ port: 0, url: 'ftp://example.com/hooks' })).rejects.toThrow(
      /^pixhook: The receiver URL: expected an http:\/\/ or https:\/\/ URL\./,
    );
  });

  test('refuses an inbox that is not an InboxReader, dead-letter queues without their methods and a readOnly that is not a boolean', async () => {
    await expect(startDashboard({ port: 0, inbox: {} as never })).rejects.toThrow(
      /^pixhook: inbox is not an InboxReader \(a PostgresArchive or RedisArchive\): it has no list, get, requestReplay\.$/,
    );
    await expect(startDashboard({ port: 0, deadLetters: {} as never })).rejects.toThrow(
      /^pixhook: deadLetters must be an array of queues/,
    );
    const partial = { engine: 'bullmq', queueName: 'q', listDeadLetters: async () => [] };
    await expect(startDashboard({ port: 0, deadLetters: [partial as never] })).rejects.toThrow(
      /^pixhook: deadLetters\[0\] is not a dead-letter source .* it has no countDeadLetters, getDeadLetter, retryDeadLetter, discardDeadLetter, retryAllDeadLetters, discardAllDeadLetters\.$/,
    );
    await expect(startDashboard({ port: 0, readOnly: 'yes' as never })).rejects.toThrow(
      /^pixhook: readOnly must be true or false\.$/,
    );
  });

  test('without an inbox or queues there are no production views: the API says so, and its routes answer 404', async () => {
    const dashboard = await started({ port: 0 });
    const info = await fetch(`${dashboard.url}api/production`);
    expect(await info.json()).toEqual({ readOnly: false, inbox: false, deadLetters: [] });
    const inbox = await fetch(`${dashboard.url}api/production/inbox`);
    expect(inbox.status).toBe(404);
    expect(await inbox.json()).toMatchObject({ error: { code: 'NO_INBOX' } });
    expect((await fetch(`${dashboard.url}api/production/dead-letters/0`)).status).toBe(404);
  });

  test('a port in use rejects with EADDRINUSE', async () => {
    const other = createServer();
    other.listen(0, '127.0.0.1');
    await once(other, 'listening');
    const { port } = other.address() as { port: number };
    try {
      await expect(startDashboard({ port })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      other.close();
    }
  });
});
