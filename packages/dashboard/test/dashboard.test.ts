import { createServer, type IncomingHttpHeaders, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EVENT_TYPES } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { ensureBuilt, run, SECRET } from '@pixhook/test-helpers/cli';
import { failFirst, receiver, slow } from '@pixhook/test-helpers/receivers';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  chromiumFound,
  describeWithChromium,
  launchBrowser,
  type RunningDashboard,
  startDashboard,
} from './helpers/dashboard.js';

/**
 * `pixhook dashboard` in a real headless Chromium, against real receivers built with
 * @pixhook/express: every click goes through the page, its API and a real delivery.
 */

let browser: Browser;

/** `expect.poll` with room for a loaded CI machine: the page updates when the server's event arrives. */
const eventually = <T>(value: () => T | Promise<T>) => expect.poll(value, { timeout: 15_000 });
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  if (!chromiumFound) return;
  ensureBuilt('@pixhook/dashboard');
  browser = await launchBrowser();
});
afterAll(() => browser?.close());
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function dashboardFor(args: string[] = [], secret: string | null = null): Promise<RunningDashboard> {
  const dashboard = await startDashboard(args, { secret });
  cleanups.push(() => dashboard.stop());
  return dashboard;
}

async function expressReceiver(...args: Parameters<typeof receiver> extends [unknown, ...infer R] ? R : never) {
  const started = await receiver('express', ...args);
  cleanups.push(() => started.close());
  return started;
}

async function open(dashboard: RunningDashboard): Promise<Page> {
  const context = await browser.newContext();
  cleanups.push(() => context.close());
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    // A Content-Security-Policy violation is reported on the console only. The API's refusals
    // (a 409 for an auto-disabled endpoint) are logged there too, and are expected.
    const text = message.text();
    if (message.type() === 'error' && !text.startsWith('Failed to load resource: the server responded')) {
      errors.push(text);
    }
  });
  // Everything the page loads comes from the dashboard itself: no CDN, no network.
  page.on('request', (request) => {
    if (!request.url().startsWith(dashboard.url)) errors.push(`request outside the dashboard: ${request.url()}`);
  });
  cleanups.push(async () => expect(errors, 'errors in the page').toEqual([]));
  await page.goto(dashboard.url);
  return page;
}

/** Enters the receiver URL and secret through the page, as a user does. */
async function setEndpoint(page: Page, url: string, secret: string): Promise<void> {
  await page.getByLabel('Receiver URL').fill(url);
  await page.getByLabel('Signing secret').fill(secret);
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await eventually(() => page.getByTestId('secret-state').textContent()).toBe('Secret set');
}

function attempts(page: Page): Locator {
  return page.getByTestId('attempt');
}

function testEvent(page: Page, type: string): Locator {
  return page.locator(`[data-testid="test-event"][data-type="${type}"]`);
}

/** A GET with exactly these headers (fetch would add its own Sec-Fetch-Mode). */
function get(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
    request(url, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    })
      .on('error', reject)
      .end();
  });
}

async function state(dashboard: RunningDashboard) {
  const response = await fetch(`${dashboard.url}api/state`);
  return (await response.json()) as { endpoint: { url?: string; state: string }; attempts: unknown[] };
}

describeWithChromium('pixhook dashboard: endpoint and test events', () => {
  test('enter the URL and secret, click each test-event button: each delivery is a 200 in the live log, and the secret never comes back', async () => {
    const express = await expressReceiver();
    const dashboard = await dashboardFor();
    const page = await open(dashboard);
    await eventually(() => page.getByTestId('secret-state').textContent()).toBe('No secret yet');
    await setEndpoint(page, express.url, SECRET);
    expect(await page.getByLabel('Signing secret').inputValue()).toBe('');

    for (const [i, type] of EVENT_TYPES.entries()) {
      await page.getByRole('button', { name: `Send ${type}`, exact: true }).click();
      await eventually(() => attempts(page).count()).toBe(i + 1);
      // Newest first.
      const entry = attempts(page).first();
      await eventually(() => entry.getAttribute('data-status')).toBe('200');
      expect(await entry.getAttribute('data-origin')).toBe('test-event');
      expect(await entry.textContent()).toContain(type);
    }
    expect(express.arrivals.map((arrival) => arrival.event.type)).toEqual([...EVENT_TYPES]);
    // Each arrival is the event the log names, with all four headers verified by the receiver.
    const logged = await attempts(page).first().textContent();
    const last = express.arrivals.at(-1);
    expect(logged).toContain(last?.event.id);
    expect(logged).toContain(last?.deliveryId);

    // The request as sent: the four delivery headers, in the entry's details.
    await attempts(page).first().locator('summary').first().click();
    // The exchange is laid out once the entry is expanded.
    await eventually(() => attempts(page).first().textContent()).toContain('x-service-signature');
    const details = await attempts(page).first().textContent();
    for (const header of ['content-type', 'x-service-event', 'x-service-delivery', 'x-service-signature']) {
      expect(details).toContain(header);
    }

    expect(await page.content()).not.toContain(SECRET);
    expect(JSON.stringify(await state(dashboard))).not.toContain(SECRET);
    expect(dashboard.output()).not.toContain(SECRET);
  });

  test('the data.object editor refuses invalid JSON, and an edited object is what the receiver gets', async () => {
    const express = await expressReceiver();
    const dashboard = await dashboardFor(['--url', express.url], SECRET);
    const page = await open(dashboard);
    const card = testEvent(page, 'image.created');
    const editor = card.getByLabel('data.object of image.created');
    const send = card.getByRole('button', { name: 'Send image.created', exact: true });

    await editor.fill('{"id": "img_edited",');
    await eventually(() => card.getByTestId('json-error').textContent()).toMatch(/JSON/);
    expect(await editor.getAttribute('aria-invalid')).toBe('true');
    expect(await send.isDisabled()).toBe(true);
    await editor.fill('[1, 2]');
    await eventually(() => card.getByTestId('json-error').textContent()).toMatch(/object/);
    expect(await send.isDisabled()).toBe(true);
    expect(express.arrivals).toHaveLength(0);

    await editor.fill('{"id": "img_edited", "filename": "edited <b>name</b>.png", "bytes": 1}');
    expect(await send.isDisabled()).toBe(false);
    await send.click();
    await eventually(() => attempts(page).first().getAttribute('data-status')).toBe('200');
    expect(express.arrivals[0]?.event.data.object).toEqual({
      id: 'img_edited',
      filename: 'edited <b>name</b>.png',
      bytes: 1,
    });
    await card.getByRole('button', { name: 'Reset sample' }).click();
    expect(JSON.parse(await editor.inputValue())).toMatchObject({ filename: 'sunset-over-harbour.jpg' });
  });

  test('a wrong secret: SIGNATURE_MISMATCH in the log, with its explanation', async () => {
    const express = await expressReceiver();
    const dashboard = await dashboardFor();
    const page = await open(dashboard);
    await setEndpoint(page, express.url, 'whsec_not_the_receivers');
    await page.getByRole('button', { name: 'Send quota.warned', exact: true }).click();
    const entry = attempts(page).first();
    await eventually(() => entry.getAttribute('data-code')).toBe('SIGNATURE_MISMATCH');
    expect(await entry.getAttribute('data-status')).toBe('400');
    expect(await entry.getByTestId('explanation').textContent()).toMatch(/different secret/);
    expect(express.arrivals).toHaveLength(0);
  });
});

describeWithChromium('pixhook dashboard: replay', () => {
  test('replay as is and re-signed get the duplicate answer; edited and re-signed is a new event the handler runs', async () => {
    const express = await expressReceiver();
    const dashboard = await dashboardFor(['--url', express.url], SECRET);
    const page = await open(dashboard);
    await page.getByRole('button', { name: 'Send image.deleted', exact: true }).click();
    await eventually(() => attempts(page).first().getAttribute('data-status')).toBe('200');
    const original = attempts(page).first();
    const originalId = await original.getAttribute('data-id');
    expect(await original.getByTestId('replay-target').textContent()).toBe(`Replays go to ${express.url}`);

    await original.getByRole('button', { name: 'Replay as is' }).click();
    await eventually(() => attempts(page).count()).toBe(2);
    let newest = attempts(page).first();
    expect(await newest.getAttribute('data-origin')).toBe('replay-as-is');
    expect(await newest.getAttribute('data-status')).toBe('200');
    expect(await newest.getAttribute('data-duplicate')).toBe('true');
    expect(await newest.textContent()).toMatch(/duplicate/);

    await page
      .locator(`[data-testid="attempt"][data-id="${originalId}"]`)
      .getByRole('button', { name: 'Re-sign and send' })
      .click();
    await eventually(() => attempts(page).count()).toBe(3);
    newest = attempts(page).first();
    expect(await newest.getAttribute('data-origin')).toBe('replay-re-signed');
    expect(await newest.getAttribute('data-duplicate')).toBe('true');
    // Both replays reached pixhook and were recognised: the handler ran once.
    expect(express.arrivals).toHaveLength(1);

    const entry = page.locator(`[data-testid="attempt"][data-id="${originalId}"]`);
    await entry.getByRole('button', { name: 'Edit and re-sign' }).click();
    const editor = entry.getByLabel('Body to re-sign');
    const body = JSON.parse(await editor.inputValue());
    await editor.fill('{ not json');
    expect(await entry.getByRole('button', { name: 'Send edited' }).isDisabled()).toBe(true);
    await editor.fill(JSON.stringify({ ...body, id: 'evt_edited_1', data: { object: { id: 'img_other' } } }, null, 2));
    await entry.getByRole('button', { name: 'Send edited' }).click();
    await eventually(() => attempts(page).count()).toBe(4);
    newest = attempts(page).first();
    expect(await newest.getAttribute('data-origin')).toBe('replay-edited');
    expect(await newest.getAttribute('data-status')).toBe('200');
    expect(express.arrivals.map((arrival) => arrival.event.id)).toEqual([body.id, 'evt_edited_1']);
    expect(express.arrivals[1]?.event.data.object).toEqual({ id: 'img_other' });
  });

  test('send twice at once: one 200, one 409 IN_FLIGHT, the handler runs once; send stale: TIMESTAMP_OUT_OF_TOLERANCE', async () => {
    const express = await expressReceiver(slow(400));
    const dashboard = await dashboardFor(['--url', express.url], SECRET);
    const page = await open(dashboard);
    await testEvent(page, 'image.created').getByRole('button', { name: 'Send image.created twice at once' }).click();
    await eventually(() => attempts(page).count()).toBe(2);
    const statuses = await attempts(page).evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-status')));
    expect(statuses.sort()).toEqual(['200', '409']);
    expect(await page.locator('[data-testid="attempt"][data-code="IN_FLIGHT"]').count()).toBe(1);
    expect(await page.locator('[data-testid="attempt"][data-origin="send-twice"]').count()).toBe(2);
    expect(express.arrivals).toHaveLength(1);

    await page.getByLabel('Stale by (seconds)').fill('900');
    await testEvent(page, 'image.created').getByRole('button', { name: 'Send image.created stale' }).click();
    await eventually(() => attempts(page).count()).toBe(3);
    const stale = attempts(page).first();
    expect(await stale.getAttribute('data-code')).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(await stale.getAttribute('data-origin')).toBe('send-stale');
    expect(await stale.getByTestId('explanation').textContent()).toMatch(/tolerance/);
    expect(express.arrivals).toHaveLength(1);
  });
});

describeWithChromium('pixhook dashboard: retry schedule', () => {
  test('the timeline against a receiver failing its first two attempts: two failures, then delivered', async () => {
    const express = await expressReceiver(failFirst(2));
    const dashboard = await dashboardFor(['--url', express.url], SECRET);
    const page = await open(dashboard);
    await page.getByRole('tab', { name: 'Retry schedule' }).click();
    await page.getByLabel('Event type').selectOption('quota.exceeded');
    // 1 min → 1 ms, 5 min → 5 ms.
    await page.getByLabel('Time scale').fill('60000');
    await page.getByRole('button', { name: 'Play retry schedule' }).click();
    const run = page.getByTestId('run').first();
    await eventually(() => run.getAttribute('data-state')).toBe('delivered');
    expect(await run.getByTestId('run-outcome').textContent()).toMatch(/delivered at attempt 3/);
    // Announced politely (for screen readers) once it ended, whatever order the answers came in.
    await eventually(() => page.getByTestId('status').textContent()).toMatch(/quota.exceeded: delivered/);
    const steps = run.getByTestId('timeline-step');
    expect(await steps.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-state')))).toEqual([
      'failed',
      'failed',
      'ok',
    ]);
    expect(await steps.nth(0).textContent()).toMatch(/500/);
    expect(await steps.nth(0).textContent()).toMatch(/HANDLER_FAILED/);
    expect(await run.textContent()).toMatch(/1 min/);
    expect(await run.textContent()).toMatch(/5 min/);
    // The same delivery each time: one event id and one delivery id, three arrivals.
    expect(express.arrivals.map((arrival) => arrival.event.type)).toEqual(Array(3).fill('quota.exceeded'));
    expect(new Set(express.arrivals.map((arrival) => arrival.deliveryId)).size).toBe(1);
    await page.getByRole('tab', { name: 'Deliveries' }).click();
    expect(await page.locator('[data-testid="attempt"][data-origin="schedule"]').count()).toBe(3);
  });

  test('a receiver that always fails: auto-disabled, deliveries refused, enabled again with the button', async () => {
    const express = await expressReceiver(() => {
      throw new Error('always failing on purpose');
    });
    const dashboard = await dashboardFor(['--url', express.url], SECRET);
    const page = await open(dashboard);
    await page.getByRole('tab', { name: 'Retry schedule' }).click();
    await page.getByLabel('Time scale').fill('600000');
    await page.getByLabel('Max attempts').fill('3');
    await page.getByRole('button', { name: 'Play retry schedule' }).click();
    const run = page.getByTestId('run').first();
    await eventually(() => run.getAttribute('data-state')).toBe('auto-disabled');
    // In the spec's words: the first attempt and its retries, not "3 failed attempts".
    const outcome = await run.getByTestId('run-outcome').textContent();
    expect(outcome).toMatch(/auto-disabled: the attempt after the last retry delay failed too/);
    expect(outcome).toMatch(/the first attempt and 2 retries failed/);
    expect(express.arrivals).toHaveLength(3);

    // Where the outcome is announced: why nothing can be played, and the button to enable again.
    const schedulePanel = page.getByRole('tabpanel');
    await eventually(() => schedulePanel.getByTestId('cannot-send').textContent()).toMatch(/auto-disabled/);
    expect(await page.getByRole('button', { name: 'Play retry schedule' }).isDisabled()).toBe(true);

    await page.getByRole('tab', { name: 'Deliveries' }).click();
    await eventually(() => page.getByTestId('endpoint-state').textContent()).toBe('auto-disabled');
    // Send and replay are disabled, with the reason in view; the API refuses too.
    expect(await page.getByRole('button', { name: 'Send image.created', exact: true }).isDisabled()).toBe(true);
    expect(await page.getByRole('tabpanel').getByTestId('cannot-send').textContent()).toMatch(/enable it again/);
    const entry = attempts(page).first();
    expect(await entry.getByRole('button', { name: 'Replay as is' }).isDisabled()).toBe(true);
    expect(await entry.getByRole('button', { name: 'Re-sign and send' }).isDisabled()).toBe(true);
    expect(await entry.getByTestId('replay-target').textContent()).toMatch(/auto-disabled/);
    const refused = await fetch(`${dashboard.url}api/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: dashboard.url.slice(0, -1) },
      body: JSON.stringify({ type: 'image.created', object: {}, mode: 'once' }),
    });
    expect(refused.status).toBe(409);
    expect(express.arrivals).toHaveLength(3);

    // Enabled again from the Retry schedule tab.
    await page.getByRole('tab', { name: 'Retry schedule' }).click();
    await page.getByRole('button', { name: 'Enable endpoint again' }).click();
    await eventually(() => page.getByRole('button', { name: 'Play retry schedule' }).isDisabled()).toBe(false);
    await page.getByRole('tab', { name: 'Deliveries' }).click();
    expect(await page.getByTestId('endpoint-state').textContent()).toBe('enabled');
    await page.getByRole('button', { name: 'Send image.created', exact: true }).click();
    await eventually(() => express.arrivals.length).toBe(4);
  });
});

/** A server that is not a pixhook receiver: it reads the delivery, then answers with `answer`. */
async function plainServer(answer: (res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume().on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
}

describeWithChromium('pixhook dashboard: large and odd answers', () => {
  test('a 5 MB answer: 1 MiB kept, a bounded prefix laid out with "Show all", the rest said not read', async () => {
    const item = '{"id":"img_0123456789","filename":"sunset.jpg","bytes":123456},';
    const body = `{"items":[${item.repeat(Math.ceil(5_000_000 / item.length))}{}]}`;
    const url = await plainServer((res) =>
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body),
    );
    const dashboard = await dashboardFor(['--url', url], SECRET);
    const page = await open(dashboard);
    await page.getByRole('button', { name: 'Send image.created', exact: true }).click();
    const entry = attempts(page).first();
    await eventually(() => entry.getAttribute('data-status')).toBe('200');
    // Nothing of the exchange is laid out until the entry is expanded.
    expect(await entry.locator('pre.body').count()).toBe(0);
    await entry.locator('summary').first().click();
    const answer = entry.locator('.http-message').nth(1);
    const shown = answer.getByTestId('body');
    expect(((await shown.textContent()) as string).length).toBe(16_384);
    const more = (Buffer.byteLength(body) - 1_048_576).toLocaleString('en-US');
    expect(await answer.getByTestId('not-read').textContent()).toContain(`${more} bytes more, not read`);
    expect(await answer.getByTestId('hidden-chars').textContent()).toBe(
      `… ${(1_048_576 - 16_384).toLocaleString('en-US')} characters more`,
    );
    await answer.getByRole('button', { name: 'Show all' }).click();
    await eventually(async () => ((await shown.textContent()) as string).length).toBe(1_048_576);
    expect(body.startsWith((await shown.textContent()) as string)).toBe(true);
    // The process kept its log.
    expect((await state(dashboard)).attempts).toHaveLength(1);
  });

  test('an endless answer: the dashboard keeps the first 1 MiB, closes the connection, and carries on', async () => {
    let closed = 0;
    const url = await plainServer((res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const piece = Buffer.alloc(65_536, 'x');
      const more = () => {
        while (!res.destroyed && res.write(piece));
        if (!res.destroyed) res.once('drain', more);
      };
      res.on('close', () => closed++);
      more();
    });
    const dashboard = await dashboardFor(['--url', url], SECRET);
    const page = await open(dashboard);
    await page.getByRole('button', { name: 'Send image.created', exact: true }).click();
    const entry = attempts(page).first();
    await eventually(() => entry.getAttribute('data-status')).toBe('200');
    await eventually(() => closed).toBe(1);
    await entry.locator('summary').first().click();
    expect(await entry.getByTestId('not-read').textContent()).toMatch(/^… more bytes, not read/);
    const [logged] = (await state(dashboard)).attempts as { answer: { body: string; truncated: boolean } }[];
    expect(logged?.answer.body.length).toBe(1_048_576);
    expect(logged?.answer.truncated).toBe(true);
  });

  test("long headers wrap, a trailing newline is marked, and a plain 500 (not pixhook's JSON) gets a hint", async () => {
    const url = await plainServer((res) =>
      res.writeHead(500, { 'content-type': 'text/plain', 'x-long': 'v'.repeat(2_000) }).end('Internal Server Error\n'),
    );
    const dashboard = await dashboardFor(['--url', url], SECRET);
    const page = await open(dashboard);
    await page.getByRole('button', { name: 'Send image.created', exact: true }).click();
    const entry = attempts(page).first();
    await eventually(() => entry.getAttribute('data-status')).toBe('500');
    expect(await entry.getByTestId('hint').textContent()).toMatch(/no pixhook error code: the server failed/);
    await entry.locator('summary').first().click();
    const answer = entry.locator('.http-message').nth(1);
    const headers = answer.getByTestId('headers');
    expect(await headers.evaluate((node) => getComputedStyle(node).whiteSpace)).toBe('pre-wrap');
    expect(await headers.evaluate((node) => node.scrollWidth <= node.clientWidth)).toBe(true);
    expect(await answer.getByTestId('trailing-newline').isVisible()).toBe(true);
    // The request's body (compact JSON, no line break at its end) is not marked.
    expect(await entry.locator('.http-message').first().getByTestId('trailing-newline').count()).toBe(0);
  });
});

describeWithChromium('pixhook dashboard: inspector', () => {
  test('lists deliveries sent to it: a verified one, and one signed with a wrong secret with its diagnosis', async () => {
    const dashboard = await dashboardFor([], SECRET);
    const page = await open(dashboard);
    await page.getByRole('tab', { name: 'Inspector' }).click();
    expect(await page.getByRole('tabpanel').textContent()).toContain(dashboard.inspectorUrl);

    const good = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
    const bad = createSignedRequest(createTestEvent('api_key.revoked'), { secret: 'whsec_someone_else' });
    expect((await fetch(dashboard.inspectorUrl, { method: 'POST', ...good })).status).toBe(200);
    expect((await fetch(`${dashboard.inspectorUrl}/hooks`, { method: 'POST', ...bad })).status).toBe(400);

    const inspected = page.getByTestId('inspected');
    await eventually(() => inspected.count()).toBe(2);
    const rejected = inspected.first();
    expect(await rejected.getAttribute('data-verdict')).toBe('rejected');
    expect(await rejected.getAttribute('data-code')).toBe('SIGNATURE_MISMATCH');
    await rejected.locator('summary').first().click();
    const diagnosis = rejected.getByTestId('diagnosis');
    expect(await diagnosis.textContent()).toMatch(/signature/);
    expect(await diagnosis.locator('[data-testid="cause"][data-cause="wrong-secret"]').count()).toBe(1);
    expect(await inspected.nth(1).getAttribute('data-verdict')).toBe('verified');
  });

  test('a body re-serialised on the way is diagnosed as such', async () => {
    const dashboard = await dashboardFor([], SECRET);
    const page = await open(dashboard);
    await page.getByRole('tab', { name: 'Inspector' }).click();
    const { body, headers } = createSignedRequest(createTestEvent('quota.warned'), { secret: SECRET });
    const pretty = JSON.stringify(JSON.parse(body), null, 2);
    expect((await fetch(dashboard.inspectorUrl, { method: 'POST', headers, body: pretty })).status).toBe(400);
    const entry = page.getByTestId('inspected').first();
    await eventually(() => entry.getAttribute('data-code')).toBe('SIGNATURE_MISMATCH');
    await entry.locator('summary').first().click();
    const cause = entry.locator('[data-testid="cause"][data-cause="body-reserialised"]');
    expect(await cause.textContent()).toMatch(/confirmed/);
  });
});

describeWithChromium('pixhook dashboard: safety', () => {
  async function otherOrigin(html: string): Promise<{ url: string; server: Server }> {
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
  }

  test('a page on another origin cannot drive the dashboard, and direct requests with a foreign Origin or Host are refused', async () => {
    const express = await expressReceiver();
    const dashboard = await dashboardFor(['--url', express.url], SECRET);
    const api = `${dashboard.url}api`;
    const evil = await otherOrigin(`<!doctype html><body><script>
      window.results = Promise.all([
        fetch('${api}/endpoint', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ url: 'http://attacker.example/steal' }) }).then(() => 'sent', (e) => 'error'),
        fetch('${api}/send', { method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'image.created', object: {}, mode: 'once' }) }).then((r) => r.status, (e) => 'blocked'),
        fetch('${api}/state').then((r) => r.text(), (e) => 'blocked'),
      ]);
    </script><form id="f" method="post" action="${api}/endpoint" enctype="text/plain"><input name='{"url":"http://attacker.example/","x":"' value='"}'></form></body>`);
    const context = await browser.newContext();
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(evil.url);
    const results = await page.evaluate(() => (window as unknown as { results: Promise<unknown[]> }).results);
    // The preflighted POST and the read are blocked by the browser; the simple POST reached the
    // dashboard, which refused it.
    expect(results[1]).toBe('blocked');
    expect(results[2]).toBe('blocked');
    const navigation = page.waitForURL(`${api}/endpoint`);
    await page.evaluate(() => (document.getElementById('f') as HTMLFormElement).submit());
    await navigation;
    // A navigation (a form posted, a link followed) gets a page saying to open the address directly.
    expect(await page.textContent('h1')).toBe('Open the pixhook dashboard directly');
    expect(await page.textContent('body')).toContain(`Open ${dashboard.url} yourself`);
    await page.goBack();
    await page.evaluate((url) => {
      const link = document.createElement('a');
      link.href = url;
      link.textContent = 'dashboard';
      document.body.append(link);
    }, `${dashboard.url}?<script>window.pwned=1</script>`);
    const followed = page.waitForURL(/\?/);
    await page.click('a');
    await followed;
    expect(await page.textContent('h1')).toBe('Open the pixhook dashboard directly');
    expect(await page.content()).not.toContain('window.pwned');

    const after = await state(dashboard);
    expect(after.endpoint.url).toBe(express.url);
    expect(after.attempts).toHaveLength(0);
    expect(express.arrivals).toHaveLength(0);

    const json = { 'content-type': 'application/json' };
    const send = JSON.stringify({ type: 'image.created', object: {}, mode: 'once' });
    const refused = await Promise.all([
      fetch(`${api}/send`, { method: 'POST', headers: { ...json, origin: 'http://evil.example' }, body: send }),
      fetch(`${api}/send`, { method: 'POST', headers: json, body: send }),
      fetch(`${api}/state`, { headers: { origin: 'null' } }),
      fetch(`${api}/send`, {
        method: 'POST',
        headers: { ...json, origin: dashboard.url.slice(0, -1), 'sec-fetch-site': 'cross-site' },
        body: send,
      }),
    ]);
    expect(refused.map((response) => response.status)).toEqual([403, 403, 403, 403]);
    const wrongType = await fetch(`${api}/send`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: dashboard.url.slice(0, -1) },
      body: send,
    });
    expect(wrongType.status).toBe(415);
    // DNS rebinding: the right address, another name.
    const rebound = await new Promise<number>((resolve, reject) => {
      request(`${api}/state`, { headers: { host: `attacker.example:${dashboard.port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(rebound).toBe(403);
    expect(express.arrivals).toHaveLength(0);
  });

  test('headers and bodies from receivers and senders are shown as text, never as markup', async () => {
    const markup = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
    const hostile = createServer((req, res) => {
      req.resume();
      res.writeHead(404, { 'content-type': 'text/html', 'x-note': '<b>bold</b>' }).end(markup);
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => hostile.close(resolve)));
    const dashboard = await dashboardFor(
      ['--url', `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/webhooks`],
      SECRET,
    );
    const page = await open(dashboard);
    await page.getByRole('button', { name: 'Send image.created', exact: true }).click();
    const entry = attempts(page).first();
    await eventually(() => entry.getAttribute('data-status')).toBe('404');
    await entry.locator('summary').first().click();
    await eventually(() => entry.textContent()).toContain(markup);
    expect(await entry.textContent()).toContain('<b>bold</b>');

    await fetch(`${dashboard.inspectorUrl}/<svg onload=alert(1)>`, {
      method: 'POST',
      headers: { 'x-service-signature': '<img src=x onerror="window.pwned=3">', 'x-service-event': markup },
      body: markup,
    });
    await page.getByRole('tab', { name: 'Inspector' }).click();
    const inspected = page.getByTestId('inspected').first();
    await eventually(() => inspected.getAttribute('data-code')).toBe('MALFORMED_SIGNATURE');
    await inspected.locator('summary').first().click();
    await eventually(() => inspected.textContent()).toContain(markup);

    expect(await page.locator('img, script:not([src]), svg, b').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
  });

  test('usable with the keyboard, and readable in light and dark mode', async () => {
    const express = await expressReceiver();
    const dashboard = await dashboardFor(['--url', express.url], SECRET);
    const page = await open(dashboard);
    const send = page.getByRole('button', { name: 'Send api_key.revoked', exact: true });
    await send.focus();
    await page.keyboard.press('Enter');
    await eventually(() => attempts(page).first().getAttribute('data-status')).toBe('200');
    // Tabs move with the arrow keys.
    await page.getByRole('tab', { name: 'Deliveries' }).focus();
    await page.keyboard.press('ArrowRight');
    await expect
      .poll(() => page.getByRole('tab', { name: 'Retry schedule' }).getAttribute('aria-selected'))
      .toBe('true');

    const luminance = () =>
      page.evaluate(() => {
        const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+/g)!.map(Number);
        return (0.2126 * r! + 0.7152 * g! + 0.0722 * b!) / 255;
      });
    await page.emulateMedia({ colorScheme: 'light' });
    expect(await luminance()).toBeGreaterThan(0.8);
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await luminance()).toBeLessThan(0.2);
  });
});

describe('pixhook dashboard: the command', () => {
  test('refuses a secret with white space without printing it, a port in use, and a port out of range', async () => {
    ensureBuilt('@pixhook/dashboard');
    const spaced = await run(['dashboard', '--port', '0'], { secret: ' whsec_spaced_secret\n' });
    expect(spaced.code).toBe(2);
    expect(spaced.stderr).toMatch(/white space/);
    expect(spaced.stderr + spaced.stdout).not.toContain('whsec_spaced_secret');

    const first = await dashboardFor();
    const busy = await run(['dashboard', '--port', String(first.port)], { secret: null });
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(new RegExp(`Port ${first.port} on 127.0.0.1 is in use`));

    const range = await run(['dashboard', '--port', '70000'], { secret: null });
    expect(range.code).toBe(2);
    expect(range.stderr).toMatch(/port from 0 to 65535/);
  });

  test('a navigation from another site gets a 403 page saying to open the address directly; API callers get JSON', async () => {
    const dashboard = await dashboardFor();
    const navigate = {
      'sec-fetch-mode': 'navigate',
      'sec-fetch-site': 'cross-site',
      accept: 'text/html,application/xhtml+xml',
      referer: 'https://evil.example/<b>',
    };
    const page = await get(`${dashboard.url}?q=<script>alert(1)</script>`, navigate);
    expect(page.status).toBe(403);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(page.body).toContain('<h1>Open the pixhook dashboard directly</h1>');
    expect(page.body).toContain(`<code>${dashboard.url}</code>`);
    expect(page.body).not.toMatch(/script|evil|<b>/);
    // An older browser without Sec-Fetch headers: Accept says it wants a page.
    const old = await get(`${dashboard.url}api/state`, { accept: 'text/html', origin: 'null' });
    expect([old.status, old.headers['content-type']]).toEqual([403, 'text/html; charset=utf-8']);
    // A script's request (cors mode) and a plain API call still get the JSON error.
    const apiCalls: Record<string, string>[] = [
      { 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'cross-site', accept: 'text/html' },
      { origin: 'http://evil.example' },
    ];
    for (const headers of apiCalls) {
      const api = await get(`${dashboard.url}api/state`, headers);
      expect(api.status).toBe(403);
      expect((JSON.parse(api.body) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
    }
  });

  test('40 answers of 1 MiB: the log keeps 32 MiB of answers, the oldest cut to 16,384 characters, the newest whole', async () => {
    const body = Buffer.alloc(1_100_000, 'a');
    const url = await plainServer((res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(body));
    const dashboard = await dashboardFor(['--url', url], SECRET);
    for (let i = 0; i < 40; i++) {
      const sent = await fetch(`${dashboard.url}api/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: dashboard.url.slice(0, -1) },
        body: JSON.stringify({ type: 'image.created', object: {}, mode: 'once' }),
      });
      expect(sent.status).toBe(200);
    }
    const { attempts: logged } = (await state(dashboard)) as unknown as {
      attempts: { answer: { body: string; truncated?: boolean; trimmed?: boolean } }[];
    };
    expect(logged).toHaveLength(40);
    const sizes = logged.map((attempt) => attempt.answer.body.length);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBeLessThanOrEqual(32 * 1_048_576);
    expect(logged[0]?.answer).toMatchObject({ truncated: true, trimmed: true });
    expect(sizes[0]).toBe(16_384);
    expect(logged.at(-1)?.answer.trimmed).toBeUndefined();
    expect(sizes.at(-1)).toBe(1_048_576);
  }, 60_000);

  test('serves its page with a strict Content-Security-Policy, on 127.0.0.1 only', async () => {
    const dashboard = await dashboardFor();
    const page = await fetch(dashboard.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await page.text()).toMatch(/<script type="module" src="\/app.js">/);
    const script = await fetch(`${dashboard.url}app.js`);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect((await fetch(`${dashboard.url}nothing-here`)).status).toBe(404);
  });
});
