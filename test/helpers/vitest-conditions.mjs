// The export conditions vitest resolves with: `@pixhook/source` first, so that every
// `@pixhook/<package>` import runs the TypeScript sources (each package's exports map it to
// src/<entry>.ts), then Vite's own defaults, which a `conditions` option replaces rather than extends.
import { defaultClientConditions, defaultServerConditions } from 'vite';

export const SOURCE_CONDITION = '@pixhook/source';

/**
 * For `ssr.resolve.conditions`: node tests run in Vite's server environment. Without `module`, as
 * Vitest's own default: Vitest passes these to its Node workers as `--conditions`, and a package's
 * `module` build need not load in Node (OpenTelemetry's has extensionless imports).
 */
export const serverConditions = [SOURCE_CONDITION, ...defaultServerConditions.filter((c) => c !== 'module')];

/** For `resolve.conditions` (the client environment). */
export const clientConditions = [SOURCE_CONDITION, ...defaultClientConditions];
