import { assertKnownOptions, describeType, WEBHOOKS_OPTION_NAMES, Webhooks } from '@pixhook/core';
import type { PixhookModuleOptions, PlatformRequest } from './options.js';

/** A segment of the path: letters, digits and - . _ ~ %, or a `:name` parameter (the same syntax on Express and Fastify). */
const SAFE_SEGMENT = /^(?:[A-Za-z0-9\-._~%]*|:[A-Za-z_][A-Za-z0-9_]*)$/;

/** The module's route: where, and how to read the tenant from its request. */
export interface Setup {
  webhooks: Webhooks;
  path: string;
  tenant: ((request: PlatformRequest) => string | undefined) | undefined;
}

/** Checks the module's options and gives the `Webhooks` they describe. Throws at startup. */
export function webhooksFrom(options: PixhookModuleOptions): Setup {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('pixhook: PixhookModule.forRoot(options) takes an options object ({ secret, path, … }).');
  }
  assertKnownOptions(
    options,
    ['path', 'tenant', 'webhooks', ...WEBHOOKS_OPTION_NAMES],
    'pixhook: PixhookModule.forRoot(options)',
  );
  const {
    path: given = '/webhooks',
    tenant,
    webhooks,
    ...rest
  } = options as PixhookModuleOptions & Record<string, unknown>;
  if (typeof given !== 'string' || given === '' || !given.split('/').every((segment) => SAFE_SEGMENT.test(segment))) {
    throw new TypeError(
      `pixhook: PixhookModule: path must be a path such as "/webhooks" or "/webhooks/:tenant": letters, digits, - . _ ~ % and / only, and :name segments, got ${JSON.stringify(given)}.`,
    );
  }
  const path = given.startsWith('/') ? given : `/${given}`;
  if (tenant !== undefined && typeof tenant !== 'function') {
    throw new TypeError(
      `pixhook: PixhookModule: tenant takes a function (request) => string | undefined, got ${describeType(tenant)}.`,
    );
  }
  if (webhooks === undefined)
    return { webhooks: new Webhooks(rest as ConstructorParameters<typeof Webhooks>[0]), path, tenant };
  if (typeof (webhooks as { handle?: unknown })?.handle !== 'function' || typeof webhooks.on !== 'function') {
    throw new TypeError('pixhook: PixhookModule: webhooks must be a Webhooks instance from @pixhook/core.');
  }
  const extra = Object.keys(rest);
  if (extra.length > 0) {
    throw new TypeError(
      `pixhook: PixhookModule: give either webhooks or the options of new Webhooks(), not both (also given: ${extra.join(', ')}).`,
    );
  }
  return { webhooks, path, tenant };
}
