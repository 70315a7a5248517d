import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { installRuntimes } from './runtimes.js';

/**
 * The parts of miniflare's API the workerd tests use. miniflare is installed on demand (not a
 * dependency), so its own types are not there to import when the workspace is type-checked.
 */
export interface MiniflareOptions {
  modules: boolean;
  script: string;
  compatibilityDate: string;
  compatibilityFlags: string[];
  bindings: Record<string, string>;
  host: string;
  port: number;
}
export interface MiniflareInstance {
  readonly ready: Promise<URL>;
  dispose(): Promise<void>;
}
export type MiniflareConstructor = new (options: MiniflareOptions) => MiniflareInstance;

/**
 * miniflare's `Miniflare` class and the workerd binary it will run, checked to start on this
 * machine, or why they cannot. Installs them first when missing (scripts/install-runtimes.mjs).
 */
export async function findWorkerd(): Promise<
  { path: string; version: string; Miniflare: MiniflareConstructor } | { path?: undefined; reason: string }
> {
  const runtimes = await installRuntimes();
  if (runtimes.dir === undefined) return { reason: runtimes.error };
  let path: string;
  let Miniflare: MiniflareConstructor;
  try {
    const entry = createRequire(join(runtimes.dir, 'package.json')).resolve('miniflare');
    const fromMiniflare = createRequire(entry);
    path = (fromMiniflare('workerd') as { default: string }).default;
    const loaded = (await import(pathToFileURL(entry).href)) as { Miniflare?: unknown };
    if (typeof loaded.Miniflare !== 'function') throw new Error(`${entry} exports no Miniflare class`);
    Miniflare = loaded.Miniflare as MiniflareConstructor;
  } catch (error) {
    return {
      reason: `miniflare and the npm "workerd" package (its runtime) are not usable from ${runtimes.dir}: ${(error as Error).message}`,
    };
  }
  const run = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 20_000 });
  if (run.status === 0) return { path, version: run.stdout.trim(), Miniflare };
  return { reason: `${path} does not run here: exit ${run.status ?? run.signal} ${run.stderr.trim().slice(0, 200)}` };
}
