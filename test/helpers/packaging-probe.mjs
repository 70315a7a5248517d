// Copied into a scratch project outside the workspace and run there by plain `node` (see
// test/packaging.test.ts): imports every specifier in argv[2] and prints, as JSON, where each one
// resolved and what it exports, then pushes one signed delivery through the packed core.
import { fileURLToPath } from 'node:url';

const describe = (value) => Object.fromEntries(Object.keys(value).map((key) => [key, typeof value[key]]));

async function load(specifier) {
  if (specifier.endsWith('/package.json')) {
    const json = await import(specifier, { with: { type: 'json' } });
    return { kind: 'json', name: json.default.name, exports: {} };
  }
  const namespace = await import(specifier);
  return { kind: 'module', exports: describe(namespace), defaultName: namespace.default?.name };
}

async function smoke() {
  const { Webhooks } = await import('@pixhook/core');
  const { createSignedRequest, createTestEvent } = await import('@pixhook/core/testing');
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

const report = { modules: {} };
for (const specifier of JSON.parse(process.argv[2])) {
  try {
    const resolved = fileURLToPath(import.meta.resolve(specifier));
    report.modules[specifier] = { resolved, ...(await load(specifier)) };
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
