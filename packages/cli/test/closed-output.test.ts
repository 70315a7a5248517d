import { type CliResult, ensureBuilt, type RunOptions, start } from '@pixhook/test-helpers/cli';
import { beforeAll, describe, expect, test } from 'vitest';

beforeAll(() => ensureBuilt());

/** Runs `pixhook …` with its stdout closed before it writes, as `| head -c1` leaves it once head has exited. */
function runWithStdoutClosed(args: string[], options: RunOptions = {}): Promise<CliResult> {
  const child = start(args, options);
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: '', stderr }));
  });
}

describe('a reader that goes away (| head)', () => {
  test('ends the command quietly: no stack trace; exit 0, or the check result when it was known', async () => {
    const [sign, listen, send] = await Promise.all([
      runWithStdoutClosed(['sign', '--timestamp', '1700000000'], { input: '{}' }),
      runWithStdoutClosed(['listen', '--port', '0']),
      runWithStdoutClosed(['send', 'http://127.0.0.1:1/webhooks', '--type', 'image.created', '--json']),
    ]);
    for (const result of [sign, listen, send]) expect(result.stderr).toBe('');
    expect(sign.code).toBe(0);
    expect(listen.code).toBe(0);
    // The delivery had failed before its JSON was printed: the exit code still says so.
    expect(send.code).toBe(1);
  });
});
