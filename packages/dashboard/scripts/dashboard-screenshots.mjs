// Takes the screenshots of docs/dashboard.md and the README: starts a real Express receiver built
// with @pixhook/express, `pixhook dashboard` as a user runs it, and drives the page in headless
// Chromium (Debian's, as the tests do). Run after `pnpm build`:
//   node packages/dashboard/scripts/dashboard-screenshots.mjs      # writes docs/dashboard-*.png
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { webhookMiddleware } from '@pixhook/express';
import express from 'express5';
import { chromium } from 'playwright-core';

const SECRET = 'whsec_screenshots_4c1d';
const docs = fileURLToPath(new URL('../../../docs/', import.meta.url));
// The CLI's binary, which loads this package (the workspace links it at the root) on demand.
const cli = fileURLToPath(new URL('../../cli/dist/cli.js', import.meta.url));

// The receiver: quota.exceeded fails its first two attempts, to show retries on the timeline.
const webhooks = new Webhooks({ secret: SECRET });
webhooks.onError(() => {});
let exceeded = 0;
webhooks.on('quota.exceeded', () => {
  if (++exceeded <= 2) throw new Error('the quota service is down (on purpose)');
});
const app = express();
app.post('/webhooks', webhookMiddleware(webhooks));
const receiver = await new Promise((resolve) => {
  const server = app.listen(0, '127.0.0.1', () => resolve(server));
});
const receiverUrl = `http://127.0.0.1:${receiver.address().port}/webhooks`;

const child = spawn(process.execPath, [cli, 'dashboard', '--port', '0', '--url', receiverUrl], {
  env: { ...process.env, PIXHOOK_SECRET: SECRET, NO_COLOR: '1' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const dashboardUrl = await new Promise((resolve, reject) => {
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    output += chunk;
    const match = /on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(output);
    if (match && output.includes('inspector')) resolve(match[1]);
  });
  child.once('exit', (code) => reject(new Error(`pixhook dashboard exited (${code}):\n${output}`)));
});

const browser = await chromium.launch({
  executablePath: process.env.PIXHOOK_CHROMIUM ?? '/usr/bin/chromium',
  args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  await page.goto(dashboardUrl);
  const newest = () => page.getByTestId('attempt').first();
  const send = async (type) => {
    const before = await page.getByTestId('attempt').count();
    await page.getByRole('button', { name: `Send ${type}`, exact: true }).click();
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="attempt"]').length > n, before);
  };

  // Deliveries: a 200, a duplicate replay, and a delivery signed with the wrong secret, explained.
  await send('image.created');
  await newest().getByRole('button', { name: 'Replay as is' }).click();
  await page.waitForSelector('[data-testid="attempt"][data-origin="replay-as-is"]');
  await page.getByLabel('Signing secret').fill('whsec_copied_from_another_endpoint');
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await send('quota.warned');
  await page.getByLabel('Signing secret').fill(SECRET);
  await page.getByRole('button', { name: 'Save endpoint' }).click();
  await newest().locator('summary').first().click();
  // An entry's exchange is laid out once it is open.
  await newest().locator('.exchange').waitFor();
  await page.screenshot({ path: `${docs}dashboard-deliveries.png`, fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: `${docs}dashboard-deliveries-dark.png`, fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });

  // Retry schedule: two failures, then delivered (1 min → 1 ms).
  await page.getByRole('tab', { name: 'Retry schedule' }).click();
  await page.getByLabel('Event type').selectOption('quota.exceeded');
  await page.getByLabel('Time scale').fill('60000');
  await page.getByRole('button', { name: 'Play retry schedule' }).click();
  await page.waitForSelector('[data-testid="run"][data-state="delivered"]');
  await page.screenshot({ path: `${docs}dashboard-schedule.png`, fullPage: true });

  // Inspector: a verified delivery, and one signed with another endpoint's secret, diagnosed.
  await page.getByRole('tab', { name: 'Inspector' }).click();
  const inspector = `${dashboardUrl}inspect`;
  const good = createSignedRequest(createTestEvent('image.deleted'), { secret: SECRET });
  await fetch(inspector, { method: 'POST', ...good });
  const bad = createSignedRequest(createTestEvent('api_key.revoked'), { secret: 'whsec_another_endpoint' });
  await fetch(`${inspector}/webhooks`, { method: 'POST', ...bad });
  await page.waitForSelector('[data-testid="inspected"][data-code="SIGNATURE_MISMATCH"]');
  await page.getByTestId('inspected').first().locator('summary').first().click();
  await page.getByTestId('inspected').first().locator('.exchange').waitFor();
  await page.screenshot({ path: `${docs}dashboard-inspector.png`, fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: `${docs}dashboard-inspector-dark.png`, fullPage: true });
  console.log(`screenshots written to ${docs}`);
} finally {
  await browser.close();
  child.kill('SIGTERM');
  receiver.closeAllConnections();
  receiver.close();
}
