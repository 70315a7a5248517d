// The NestJS servers' modules, in plain JS: Nest's decorators applied by hand, as tsc emits them
// (packages/nestjs/test/fixtures/nest-app.cjs does the same), so there is no TypeScript build step.
// A platform's file (nest-express.mjs, nest-fastify.mjs) gives the adapter; only it is loaded.
import 'reflect-metadata';
import { Controller, Header, HttpCode, Injectable, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MemoryStore } from '@pixhook/core';
import { OnWebhook, PixhookModule } from '@pixhook/nestjs';
import { SECRET } from '../../payloads.mjs';
import { OK, PATH } from './shared.mjs';

/** Applies decorators as tsc's `__decorate` does: to a class, or to a method of a prototype. */
function decorate(decorators, target, key) {
  if (key === undefined) return decorators.reduceRight((value, decorator) => decorator(value) ?? value, target);
  const descriptor = Object.getOwnPropertyDescriptor(target, key);
  for (const decorator of [...decorators].reverse()) decorator(target, key, descriptor);
  return target;
}

/** bare: a controller route that reads nothing and answers 200 with the same JSON as the other bare routes. */
class BareController {
  webhook() {
    return OK;
  }
}
decorate([Post(), HttpCode(200), Header('Content-Type', 'application/json')], BareController.prototype, 'webhook');
decorate([Controller(PATH)], BareController);

class BareModule {}
decorate([Module({ controllers: [BareController] })], BareModule);

/** pixhook: the one handler, an `@OnWebhook()` method of a provider, which counts. */
class ImageWebhooks {
  handled = 0;
  created() {
    this.handled++;
  }
}
decorate([OnWebhook('image.created')], ImageWebhooks.prototype, 'created');
decorate([Injectable()], ImageWebhooks);

/** pixhook: `PixhookModule.forRoot({ secret, path })` with a MemoryStore, as its README mounts it. */
class PixhookAppModule {}
decorate(
  [
    Module({
      imports: [PixhookModule.forRoot({ secret: SECRET, path: PATH, store: new MemoryStore() })],
      providers: [ImageWebhooks],
    }),
  ],
  PixhookAppModule,
);

/**
 * Starts one variant on 127.0.0.1 (a free port) on `adapter`; answers `{ server, close, handled }`.
 * The pixhook app is created as the README's main.ts does (Nest's body parsers on); bare with
 * `bodyParser: false`, so that nothing reads the body, and `bare(app)` for what the platform needs
 * more (Fastify parses JSON bodies itself).
 */
export async function startNest(variant, adapter, { bare } = {}) {
  const pixhook = variant === 'pixhook';
  if (!pixhook && variant !== 'bare') throw new Error(`unknown Nest variant ${variant}`);
  const app = await NestFactory.create(pixhook ? PixhookAppModule : BareModule, adapter, {
    logger: false,
    ...(pixhook ? {} : { bodyParser: false }),
  });
  if (!pixhook) bare?.(app);
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer();
  const handlers = pixhook ? app.get(ImageWebhooks) : undefined;
  const close = async () => {
    server.closeAllConnections?.();
    await app.close();
  };
  return { server, close, handled: handlers && (() => handlers.handled) };
}
