import { assertKnownOptions, WEBHOOKS_OPTION_NAMES, Webhooks } from '@pixhook/core';
import type { PixhookModuleOptions } from './options.js';

const SAFE_PATH = /^\/[A-Za-z0-9\-._~%/]*$/;

/** Checks the module's options and gives the `Webhooks` they describe. Throws at startup. */
export function webhooksFrom(options: PixhookModuleOptions): { webhooks: Webhooks; path: string } {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('pixhook: PixhookModule.forRoot(options) takes an options object ({ secret, path, … }).');
  }
  assertKnownOptions(
    options,
    ['path', 'webhooks', ...WEBHOOKS_OPTION_NAMES],
    'pixhook: PixhookModule.forRoot(options)',
  );
  const { path = '/webhooks', webhooks, ...rest } = options as PixhookModuleOptions & Record<string, unknown>;
  if (typeof path !== 'string' || !SAFE_PATH.test(path)) {
    throw new TypeError(
      `pixhook: PixhookModule: path must start with "/" and hold only letters, digits and - . _ ~ % /, got ${JSON.stringify(path)}.`,
    );
  }
  if (webhooks === undefined)
    return { webhooks: new Webhooks(rest as ConstructorParameters<typeof Webhooks>[0]), path };
  if (typeof (webhooks as { handle?: unknown })?.handle !== 'function' || typeof webhooks.on !== 'function') {
    throw new TypeError('pixhook: PixhookModule: webhooks must be a Webhooks instance from @pixhook/core.');
  }
  const extra = Object.keys(rest);
  if (extra.length > 0) {
    throw new TypeError(
      `pixhook: PixhookModule: give either webhooks or the options of new Webhooks(), not both (also given: ${extra.join(', ')}).`,
    );
  }
  return { webhooks, path };
}
