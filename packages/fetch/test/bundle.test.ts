/**
 * The fetch entry, and the parts of core an app reaches through it, bundle for runtimes without
 * Node built-ins (Workers, browsers): not one `node:` import on the Web Crypto path.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundle } from './helpers/bundle.js';

const file = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const FETCH_ENTRY = file('../src/index.ts');
// A whole Worker: new Webhooks(…) from @pixhook/core, createFetchHandler, handlers.
const WORKER = file('./fixtures/worker.ts');
const NODE_IMPORT = /\bfrom\s*["']node:|\brequire\(\s*["']node:|\bimport\(\s*["']node:/;

describe('bundling @pixhook/fetch for a platform without Node', () => {
  it.each(['neutral', 'browser'] as const)(
    'platform %s: the fetch entry imports no Node built-in',
    async (platform) => {
      const { code, nodeImports } = await bundle(FETCH_ENTRY, platform);
      expect(nodeImports).toEqual([]);
      expect(code).toContain('createFetchHandler');
      expect(code).not.toMatch(NODE_IMPORT);
    },
  );

  it.each(['neutral', 'browser'] as const)(
    'platform %s: a Worker with core and the handler imports no Node built-in',
    async (platform) => {
      const { code, nodeImports, inputs } = await bundle(WORKER, platform);
      expect(nodeImports).toEqual([]);
      expect(code).not.toMatch(NODE_IMPORT);
      // It takes in core's pipeline and Web Crypto verifier, and not the Node adapters' body reader.
      expect(inputs).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/core\/src\/pipeline\/pipeline\.ts$/),
          expect.stringMatching(/core\/src\/protocol\/web-crypto\.ts$/),
        ]),
      );
      expect(inputs.filter((input) => /core\/src\/(node|runtime\/read-stream)\.ts$/.test(input))).toEqual([]);
      expect(code).toContain('importKey');
    },
  );

  it('the check catches node: imports: a module importing node:crypto and node:stream is flagged', async () => {
    const { nodeImports } = await bundle(file('./fixtures/imports-node.ts'), 'neutral');
    expect(nodeImports).toEqual(
      expect.arrayContaining([expect.stringMatching(/crypto/), expect.stringMatching(/stream/)]),
    );
  });
});
