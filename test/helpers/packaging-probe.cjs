// Copied into a scratch project outside the workspace and run there by plain `node` (see
// test/packaging.test.ts): require()s every specifier in argv[2] and prints, as JSON, where each
// one resolved and what it exports, then pushes one signed delivery through the packed core.
const describe = (value) => Object.fromEntries(Object.keys(value).map((key) => [key, typeof value[key]]));

function load(specifier) {
  const value = require(specifier);
  if (specifier.endsWith('/package.json')) return { kind: 'json', name: value.name, exports: {} };
  return {
    kind: typeof value,
    exports: describe(value),
    name: typeof value === 'function' ? value.name : undefined,
    // Code compiled from `import x from` without esModuleInterop reads `.default`.
    selfDefault: typeof value === 'function' && value.default === value,
  };
}

async function smoke() {
  const { Webhooks } = require('@pixhook/core');
  const { createSignedRequest, createTestEvent } = require('@pixhook/core/testing');
  const secret = 'whsec_packaging_probe';
  const seen = [];
  const webhooks = new Webhooks({ secret }).on('image.created', (event) => {
    seen.push(event.id);
  });
  const event = createTestEvent('image.created');
  const { headers, body } = createSignedRequest(event, { secret });
  const signed = await webhooks.handle({ method: 'POST', headers, body });
  const forged = await webhooks.handle({ method: 'POST', headers, body: body.replace('"bytes"', '"bytez"') });
  return { signed: signed.status, forged: forged.status, ran: seen.length === 1 && seen[0] === event.id };
}

async function main() {
  const report = { modules: {} };
  for (const specifier of JSON.parse(process.argv[2])) {
    try {
      report.modules[specifier] = { resolved: require.resolve(specifier), ...load(specifier) };
    } catch (error) {
      report.modules[specifier] = { error: String(error?.stack ?? error) };
    }
  }
  try {
    report.smoke = await smoke();
  } catch (error) {
    report.smoke = { error: String(error?.stack ?? error) };
  }
  process.stdout.write(JSON.stringify(report));
}

main();
