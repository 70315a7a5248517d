import { Global, Inject, Logger, Module, type OnModuleInit } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, HttpAdapterHost, MetadataScanner } from '@nestjs/core';
import { Webhooks } from '@pixhook/core';
import { addDecoratedHandlers } from './handlers.js';
import { PIXHOOK_MODULE_OPTIONS, PixhookConfigurableModule } from './module-definition.js';
import { mountOnExpress, mountOnFastify } from './mount.js';
import type { PixhookModuleOptions } from './options.js';
import { webhooksFrom } from './webhooks-provider.js';

const SETUP = Symbol('pixhook:setup');
type Setup = ReturnType<typeof webhooksFrom>;

/**
 * pixhook for NestJS. `PixhookModule.forRoot({ secret })` (or `forRootAsync({ useFactory, inject })`)
 * mounts the webhook route (`path`, default `/webhooks`) on the Express or Fastify platform, runs
 * the `@OnWebhook()` methods of your providers for verified deliveries, and makes the `Webhooks`
 * injectable everywhere (global module). Without an HTTP platform
 * (`NestFactory.createApplicationContext`, a queue worker), it mounts nothing and still adds the
 * handlers, so `webhooks.process()` runs them.
 *
 * @example
 * @Module({
 *   imports: [PixhookModule.forRoot({ secret: process.env.SIGNING_SECRET, path: '/webhooks' })],
 *   providers: [ImageHandlers],
 * })
 * export class AppModule {}
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: SETUP,
      useFactory: (options: PixhookModuleOptions) => webhooksFrom(options),
      inject: [PIXHOOK_MODULE_OPTIONS],
    },
    { provide: Webhooks, useFactory: (setup: Setup) => setup.webhooks, inject: [SETUP] },
  ],
  exports: [Webhooks],
})
export class PixhookModule extends PixhookConfigurableModule implements OnModuleInit {
  readonly #logger = new Logger('PixhookModule');

  constructor(
    @Inject(SETUP) private readonly setup: Setup,
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
  ) {
    super();
  }

  /** Adds the decorated methods, then mounts the route; both before the app takes requests. */
  onModuleInit(): void {
    const { webhooks, path, tenant } = this.setup;
    const handlers = addDecoratedHandlers(webhooks, this.discovery, this.scanner);
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter === undefined || adapter === null) {
      this.#logger.log(`${handlers} webhook handler(s); no HTTP platform, so no route (a worker)`);
      return;
    }
    const platform = adapter.getType();
    if (platform === 'express') {
      const ahead = mountOnExpress(adapter.getInstance(), path, webhooks, tenant);
      if (!ahead) {
        this.#logger.warn(
          `Could not place the webhook route before the app's body parsers; create the app with NestFactory.create(AppModule, { rawBody: true }) so the raw bytes are kept.`,
        );
      }
    } else if (platform === 'fastify') {
      mountOnFastify(adapter.getInstance(), path, webhooks, tenant);
    } else {
      throw new Error(
        `pixhook: @pixhook/nestjs mounts its route on @nestjs/platform-express and @nestjs/platform-fastify; this app runs on "${String(platform)}". Use webhooks.handle() from your own route there.`,
      );
    }
    this.#logger.log(`Webhook route POST ${path} on ${platform}, ${handlers} handler(s)`);
  }
}
