// The export conditions vitest resolves with: `@pixhook/source` first, so that every
// `@pixhook/<package>` import runs the TypeScript sources (each package's exports map it to
// src/<entry>.ts), then Vite's own defaults, which a `conditions` option replaces rather than extends.
import { defaultClientConditions, defaultServerConditions } from 'vite';

export const SOURCE_CONDITION = '@pixhook/source';

/** For `ssr.resolve.conditions`: node tests run in Vite's server environment. */
export const serverConditions = [SOURCE_CONDITION, ...defaultServerConditions];

/** For `resolve.conditions` (the client environment). */
export const clientConditions = [SOURCE_CONDITION, ...defaultClientConditions];
