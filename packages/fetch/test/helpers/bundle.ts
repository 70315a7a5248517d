import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const packages = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

const BUILTINS = new Set(builtinModules);

function isNodeBuiltin(path: string): boolean {
  return path.startsWith('node:') || BUILTINS.has(path) || BUILTINS.has(path.split('/')[0] as string);
}

/** A bundle, with every Node built-in something in it tried to import (left external). */
export interface Bundle {
  code: string;
  /** `"node:stream" from packages/core/src/node.ts`, one per import of a built-in. */
  nodeImports: string[];
  /** The files that went into the bundle, relative to the repository. */
  inputs: string[];
}

/**
 * Bundles `entry` as an ES module for a platform without Node built-ins, the way a Workers or
 * browser build would, and reports every import of a Node built-in instead of failing on it.
 */
export async function bundle(entry: string, platform: 'browser' | 'neutral' = 'neutral'): Promise<Bundle> {
  const nodeImports: string[] = [];
  const plugin: Plugin = {
    name: 'pixhook-builtins',
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (!isNodeBuiltin(args.path)) return undefined;
        nodeImports.push(`${JSON.stringify(args.path)} from ${args.importer.replace(packages(''), '')}`);
        return { path: args.path, external: true };
      });
    },
  };
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform,
    // As Workers bundlers resolve packages (wrangler: the workerd/worker/browser conditions), with
    // the workspace's @pixhook/* packages taken from their TypeScript sources as the tests run them.
    conditions: ['@pixhook/source', 'workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    target: 'es2022',
    metafile: true,
    logLevel: 'silent',
    plugins: [plugin],
  });
  return {
    code: result.outputFiles[0]?.text ?? '',
    nodeImports,
    inputs: Object.keys(result.metafile.inputs),
  };
}
