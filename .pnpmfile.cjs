// The `@pixhook/source` export condition points at src/*.ts, which is not published: the workspace's
// TypeScript and vitest resolve through it, Node and bundlers never set it. Packing (pnpm pack,
// pnpm publish, pnpm release) drops it so the published exports name only files in the tarball.
function withoutSourceCondition(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key !== '@pixhook/source') out[key] = withoutSourceCondition(inner);
  }
  return out;
}

module.exports = {
  hooks: {
    beforePacking(pkg) {
      if (pkg.exports) pkg.exports = withoutSourceCondition(pkg.exports);
      delete pkg.tsup;
      return pkg;
    },
  },
};
