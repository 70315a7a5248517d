import 'reflect-metadata';
import type { INestApplication, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { Webhooks } from '@pixhook/core';
import { PixhookModule } from '@pixhook/nestjs';
import { type AdapterUnderTest, httpSend, TENANT_ROUTE, type TestRequest, WEBHOOK_PATH } from './http.js';

export type NestPlatform = 'express' | 'fastify';

/** What `NestFactory.create(module, adapter, options)` takes as its options, for the tests. */
export interface NestAppOptions {
  rawBody?: boolean;
  bodyParser?: boolean;
  /** The app's logger; @default false (none) */
  logger?: LoggerService | false;
}

/** A Nest app on `platform`, listening on 127.0.0.1 at a free port, as `main.ts` starts one. */
export async function startNestApp(
  module: unknown,
  platform: NestPlatform,
  options: NestAppOptions = {},
  prepare?: (app: INestApplication) => void | Promise<void>,
): Promise<{
  app: INestApplication;
  send: (request: TestRequest) => ReturnType<typeof httpSend>;
  close: () => Promise<void>;
}> {
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(module as never, adapter, { logger: false, abortOnError: false, ...options });
  await prepare?.(app);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return { app, send: (request) => httpSend(address.port, request), close: () => app.close() };
}

function nestAdapter(platform: NestPlatform, options: NestAppOptions): AdapterUnderTest {
  const flags = Object.entries(options)
    .map(([name, value]) => `${name}: ${value}`)
    .join(', ');
  return {
    name: `nestjs/${platform}${flags ? ` (${flags})` : ''}`,
    create: async (webhooks: Webhooks) => {
      const { send, close } = await startNestApp(
        PixhookModule.forRoot({ webhooks, path: WEBHOOK_PATH }),
        platform,
        options,
      );
      return { send, close };
    },
    createTenant: async (webhooks: Webhooks) => {
      const { send, close } = await startNestApp(
        PixhookModule.forRoot({ webhooks, path: TENANT_ROUTE }),
        platform,
        options,
      );
      return { send, close };
    },
  };
}

/** `@pixhook/nestjs` on both platforms, with Nest's default body parsers and with `rawBody: true`. */
export const NEST_ADAPTERS: AdapterUnderTest[] = [
  nestAdapter('express', {}),
  nestAdapter('express', { rawBody: true }),
  nestAdapter('fastify', {}),
  nestAdapter('fastify', { rawBody: true }),
];
