import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Webhooks } from '@pixhook/core';
import { ensureBuilt, run, SECRET, start } from '@pixhook/test-helpers/cli';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';

beforeAll(() => ensureBuilt());

const body = '{"id":"evt_sign_1","type":"quota.warned","created":1700000000,"data":{"object":{"plan":"pro"}}}';
const delivery = { 'x-service-event': 'quota.warned', 'x-service-delivery': 'd-1' };

describe('pixhook sign', () => {
  test('prints a header that core verifies, for a file and for stdin', async () => {
    const file = join(tmpdir(), `pixhook-cli-sign-${process.pid}.json`);
    writeFileSync(file, body);
    const [fromFile, fromStdin] = await Promise.all([
      run(['sign', '--body', file, '--timestamp', '1700000000']),
      run(['sign', '--json'], { input: body }),
    ]);
    expect(fromFile.code).toBe(0);
    const header = fromFile.stdout.trim();
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    const untimed = new Webhooks({ secret: SECRET, tolerance: false, store: false });
    expect(untimed.verify(body, { ...delivery, 'x-service-signature': header }).id).toBe('evt_sign_1');

    expect(fromStdin.code).toBe(0);
    const json = JSON.parse(fromStdin.stdout);
    expect(Math.abs(json.timestamp - Date.now() / 1000)).toBeLessThan(60);
    const webhooks = new Webhooks({ secret: SECRET, store: false });
    expect(webhooks.verify(body, { ...delivery, 'x-service-signature': json.header }).type).toBe('quota.warned');
  });

  test('the signature covers the bytes exactly: a trailing newline changes it', async () => {
    const [plain, withNewline] = await Promise.all([
      run(['sign', '--timestamp', '1'], { input: body }),
      run(['sign', '--timestamp', '1'], { input: `${body}\n` }),
    ]);
    expect(plain.stdout).not.toBe(withNewline.stdout);
  });

  test('--timestamp refuses milliseconds and anything but whole seconds (exit 2), saying why', async () => {
    const [millis, fraction, negative] = await Promise.all([
      run(['sign', '--timestamp', '1700000000000'], { input: body }),
      run(['sign', '--timestamp', '1700000000.5'], { input: body }),
      run(['sign', '--timestamp', '-5'], { input: body }),
    ]);
    expect(millis.code).toBe(2);
    expect(millis.stdout).toBe('');
    expect(millis.stderr).toContain('1700000000000 looks like milliseconds');
    expect(millis.stderr).toContain('e.g. 1700000000');
    for (const result of [fraction, negative]) {
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('expected Unix seconds: a whole number');
    }
  });

  test('a secret with white space is refused (exit 2) without being printed', async () => {
    const secret = `${SECRET} `;
    const { code, stdout, stderr } = await run(['sign'], { input: body, secret });
    expect(code).toBe(2);
    expect(stderr).toContain('white space');
    expect(`${stdout}${stderr}`).not.toContain(SECRET);
  });
});

describe('pixhook listen', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  test('receives what send produces, reports rejections and duplicates, and stops on SIGTERM', async () => {
    const listener = start(['listen', '--port', '0', '--json']);
    const exited = new Promise<number | null>((resolve) => listener.on('exit', resolve));
    stop = () => listener.kill('SIGKILL');
    const lines = createInterface({ input: listener.stdout })[Symbol.asyncIterator]();
    const next = async () => JSON.parse((await lines.next()).value as string);
    const { listening } = await next();
    expect(listening).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const url = `${listening}/webhooks`;

    const sent = await run(['send', url, '--type', 'image.deleted', '--event-id', 'evt_listen_1', '--json']);
    expect(sent.code).toBe(0);
    const received = await next();
    expect(received).toMatchObject({
      method: 'POST',
      path: '/webhooks',
      status: 200,
      deliveryId: JSON.parse(sent.stdout).deliveryId,
      event: { id: 'evt_listen_1', type: 'image.deleted', data: { object: { status: 'soft-deleted' } } },
    });

    const again = await run(['send', url, '--type', 'image.deleted', '--event-id', 'evt_listen_1']);
    expect(again.code).toBe(0);
    expect(await next()).toMatchObject({ status: 200, duplicate: true });

    const forged = await run(['send', url, '--type', 'image.created'], { secret: 'whsec_not_this_one' });
    expect(forged.code).toBe(1);
    expect(await next()).toMatchObject({ status: 400, code: 'SIGNATURE_MISMATCH' });

    listener.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  test('--fail-first n answers 500 to the first n deliveries, so simulate shows the retries', async () => {
    const listener = start(['listen', '--port', '0', '--fail-first', '2']);
    stop = () => listener.kill('SIGKILL');
    const lines = createInterface({ input: listener.stdout })[Symbol.asyncIterator]();
    const first = (await lines.next()).value as string;
    const url = `${/http:\/\/[\d.:]+/.exec(first)?.[0]}/webhooks`;

    const simulated = await run(['simulate', url, '--time-scale', '1000000', '--json']);
    expect(simulated.code).toBe(0);
    const result = JSON.parse(simulated.stdout);
    expect(result.attempts.map((a: { status: number }) => a.status)).toEqual([500, 500, 200]);
    const printed = [(await lines.next()).value, (await lines.next()).value, (await lines.next()).value].join('\n');
    expect(printed).toContain('(failed on purpose: --fail-first)');
    expect(printed).toMatch(/← 200 OK {2}image\.created/);
  });
});

describe('--help', () => {
  test('every command has help with examples; exit 0', async () => {
    const commands = ['send', 'simulate', 'verify', 'sign', 'listen'];
    const results = await Promise.all([run(['--help']), ...commands.map((command) => run([command, '--help']))]);
    for (const result of results) {
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Examples:');
      expect(result.stdout).toContain('PIXHOOK_SECRET');
      expect(result.stdout).not.toContain(SECRET);
    }
    expect(results[2]?.stdout).toContain('7 attempts in all');
  });
});
