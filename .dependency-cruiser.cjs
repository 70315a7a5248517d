// The architecture check that `pnpm lint` runs (dependency-cruiser): no import circle anywhere, and
// imports that run one way only, between core's layers and between the packages. The picture of
// what each layer and package owns is docs/internals.md; CONTRIBUTING.md says where new code goes.

/** Core's layers, lowest first: a file may import its own layer and the ones before it. */
const CORE_LAYERS = ['util', 'protocol', 'seams', 'stores', 'modes', 'pipeline', 'runtime'];
const CORE = '^packages/core/src/';
// Unit tests sit beside their file and may use the public API (src/*.ts) to test it.
const NOT_TESTS = '\\.test(-d)?\\.ts$';

const layerRules = CORE_LAYERS.slice(0, -1).map((layer, i) => ({
  name: `core-${layer}-imports-down`,
  comment: `packages/core/src/${layer}/ may import only ${CORE_LAYERS.slice(0, i + 1).join(', ')}: not ${CORE_LAYERS.slice(i + 1).join(', ')}, nor the public files at src/ (docs/internals.md).`,
  severity: 'error',
  from: { path: `${CORE}${layer}/`, pathNot: NOT_TESTS },
  to: { path: [`${CORE}(${CORE_LAYERS.slice(i + 1).join('|')})/`, `${CORE}[^/]+$`] },
}));

/** Packages that sit right above core: an engine for the store, the transactions or a queue, or an adapter. */
const ON_CORE = ['bullmq', 'express', 'fastify', 'fetch', 'koa', 'lambda', 'opentelemetry', 'pg-boss', 'redis'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import circle: a module reaches itself again. Cut it by moving the shared part one layer down.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'core-layers-below-the-public-files',
      comment:
        'A file of a core layer may not import the public files at packages/core/src/ (index, webhooks, node, testing).',
      severity: 'error',
      from: { path: `${CORE}[^/]+/`, pathNot: NOT_TESTS },
      to: { path: `${CORE}[^/]+$` },
    },
    {
      name: 'core-is-the-base',
      comment: '@pixhook/core depends on no other pixhook package.',
      severity: 'error',
      from: { path: '^packages/core/' },
      to: { path: '^packages/(?!core/)' },
    },
    {
      name: 'on-core-imports-core-only',
      comment:
        'Engines and adapters build on @pixhook/core alone: one adapter never imports another, nor an engine (@pixhook/postgres re-exports @pixhook/pg-boss for one minor, see its index).',
      severity: 'error',
      from: { path: `^packages/(${ON_CORE.join('|')})/src/` },
      to: { path: '^packages/', pathNot: ['^packages/core/', '^packages/$1/'] },
    },
    {
      name: 'nestjs-builds-on-the-http-adapters',
      comment:
        '@pixhook/nestjs mounts its route with the adapter of the platform Nest runs on (Express or Fastify), and nothing else.',
      severity: 'error',
      from: { path: '^packages/nestjs/src/' },
      to: { path: '^packages/', pathNot: ['^packages/(core|express|fastify|nestjs)/'] },
    },
    {
      name: 'packages-meet-through-their-names',
      comment:
        "A package reaches another through its name (@pixhook/…), never a relative path into the other's folder: what is not exported is not there once installed.",
      severity: 'error',
      from: { path: '^packages/([^/]+)/' },
      to: { dependencyTypes: ['local'], path: '^packages/', pathNot: '^packages/$1/' },
    },
    {
      name: 'src-uses-no-dev-dependency',
      comment: "A package's src/ may not import what only its devDependencies provide: it is not installed for users.",
      severity: 'error',
      from: { path: '^packages/[^/]+/src/', pathNot: NOT_TESTS },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules|coverage)/' },
    // Type-only imports count: an upward type import is an upward dependency all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Workspace packages resolve to their sources (the `@pixhook/source` export condition), so a
    // circle through two packages shows as one.
    enhancedResolveOptions: {
      conditionNames: ['@pixhook/source', 'import', 'require', 'node', 'default'],
      exportsFields: ['exports'],
      mainFields: ['module', 'main', 'types', 'typings'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.d.ts', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
