import { existsSync } from 'node:fs';
import { type RunOptions, start } from '@pixhook/test-helpers/cli';
import { describeIfAvailable } from '@pixhook/test-helpers/unavailable';
import { type Browser, chromium } from 'playwright-core';

/**
 * Debian's chromium (`.ci/run` installs it when missing): Playwright's own browser download is not
 * reachable from CI, so playwright-core drives the system browser. PIXHOOK_CHROMIUM names another.
 */
export const CHROMIUM = process.env.PIXHOOK_CHROMIUM ?? '/usr/bin/chromium';

/** Whether the browser is there; the tests start it only then. */
export const chromiumFound = existsSync(CHROMIUM);

/**
 * `describe` for the browser tests: skipped with a note without Chromium, except under CI, which
 * installs it and fails loudly when it cannot run.
 */
export const describeWithChromium = describeIfAvailable(
  'The dashboard’s browser tests (pixhook dashboard)',
  chromiumFound ? undefined : `no Chromium at ${CHROMIUM}`,
  'install it (Debian: apt-get install chromium) or point PIXHOOK_CHROMIUM at one',
);

/** Headless Chromium; without its sandbox when running as root, which Chromium refuses otherwise. */
export function launchBrowser(): Promise<Browser> {
  const root = process.getuid?.() === 0;
  return chromium.launch({ executablePath: CHROMIUM, args: root ? ['--no-sandbox'] : [] });
}

export interface RunningDashboard {
  /** The page, e.g. `http://127.0.0.1:43123/`. */
  url: string;
  port: number;
  inspectorUrl: string;
  /** Everything the process printed so far, stdout and stderr. */
  output(): string;
  stop(): Promise<void>;
}

/** `pixhook dashboard --port 0 …` as a user runs it, until its first line gives the address. */
export function startDashboard(args: string[] = [], options: RunOptions = {}): Promise<RunningDashboard> {
  const child = start(['dashboard', '--port', '0', ...args], options);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pixhook dashboard did not start:\n${output}`)), 15_000);
    const collect = (chunk: string) => {
      output += chunk;
      const match = /on (http:\/\/127\.0\.0\.1:(\d+)\/)/.exec(output);
      const inspector = /inspector[^:]*: (\S+)/.exec(output);
      if (match && inspector) {
        clearTimeout(timer);
        resolve({
          url: match[1] as string,
          port: Number(match[2]),
          inspectorUrl: inspector[1] as string,
          output: () => output,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    };
    child.stdout.setEncoding('utf8').on('data', collect);
    child.stderr.setEncoding('utf8').on('data', collect);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`pixhook dashboard exited (${code}) before it started:\n${output}`));
    });
  });
}
