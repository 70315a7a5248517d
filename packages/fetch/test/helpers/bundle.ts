import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const packages = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

/** The workspace packages, bundled from their TypeScript sources as the tests run them. */
const SOURCES: Record<string, string> = {
  '@pixhook/core': packages('core/src/index.ts'),
  '@pixhook/core/testing': packages('core/src/testing.ts'),
  '@pixhook/core/node': packages('core/src/node.ts'),
  '@pixhook/fetch': packages('fetch/src/index.ts'),
};

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
    name: 'pixhook-sources-and-builtins',
    setup(b) {
      b.onResolve({ filter: /^@pixhook\// }, (args) => {
        const path = SOURCES[args.path];
        return path ? { path } : undefined;
      });
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
    // As Workers bundlers resolve packages (wrangler: the workerd/worker/browser conditions).
    conditions: ['workerd', 'worker', 'browser'],
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
