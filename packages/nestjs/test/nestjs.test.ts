// @pixhook/nestjs in real Nest applications on both platforms: handlers found on providers with
// their dependencies injected, the module's options and forRootAsync, the app's other routes,
// guards, interceptors, pipes and exception filters left as they are, and startup errors.
import 'reflect-metadata';
import {
  type ArgumentsHost,
  Body,
  type CallHandler,
  type CanActivate,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  Injectable,
  Module,
  type NestInterceptor,
  type PipeTransform,
  Post,
  Req,
  Scope,
} from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { type AnyEvent, type ErrorContext, MemoryStore, Webhooks, type WebhookVerificationError } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import {
  OnAnyWebhook,
  OnWebhook,
  OnWebhookError,
  PixhookModule,
  type WebhookEventOf,
  type WebhookHandlerContext,
} from '@pixhook/nestjs';
import { delivery, errorCode, SECRET } from '@pixhook/test-helpers/deliveries';
import { httpSend, type TestRequest } from '@pixhook/test-helpers/http';
import { type NestAppOptions, type NestPlatform, startNestApp } from '@pixhook/test-helpers/nest-adapters';
import {
  brokenTenantOptions,
  expectNoUnhandledRejection,
  NO_TENANT_CAUSE,
  recordingTenantWebhooks,
} from '@pixhook/test-helpers/tenants';
import { map } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';

/** What the handlers did, through a provider injected into them. */
@Injectable()
class Ledger {
  readonly entries: string[] = [];
  readonly errors: string[] = [];
  add(entry: string) {
    this.entries.push(entry);
  }
}

@Injectable()
class ImageHandlers {
  failuresLeft = 0;
  constructor(private readonly ledger: Ledger) {}

  @OnWebhook('image.created')
  async created(event: WebhookEventOf<'image.created'>, context: WebhookHandlerContext) {
    if (this.failuresLeft > 0) {
      this.failuresLeft -= 1;
      throw new Error('the image index is down');
    }
    this.ledger.add(`created ${event.id} ${context.deliveryId}`);
  }

  @OnWebhook(['quota.warned', 'quota.exceeded'])
  quota(event: WebhookEventOf<'quota.warned' | 'quota.exceeded'>) {
    this.ledger.add(`quota ${event.type}`);
  }

  @OnAnyWebhook()
  any(event: AnyEvent) {
    this.ledger.add(`any ${event.type}`);
  }

  @OnWebhookError()
  failed(error: WebhookVerificationError, context: ErrorContext) {
    this.ledger.errors.push(`${error.code} ${context.deliveryId ?? '-'}`);
  }
}

/** One of the app's own routes: JSON parsed by Nest as usual. */
@Controller('items')
class ItemsController {
  @Post()
  create(@Body() body: unknown, @Req() req: { rawBody?: Buffer }) {
    return { received: body, rawBody: req.rawBody?.toString('utf8') ?? null };
  }
}

const PLATFORMS: NestPlatform[] = ['express', 'fastify'];

const running: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
});

function appModule(pixhook: unknown = PixhookModule.forRoot({ secret: SECRET })) {
  @Module({ imports: [pixhook as never], controllers: [ItemsController], providers: [Ledger, ImageHandlers] })
  class AppModule {}
  return AppModule;
}

async function start(
  platform: NestPlatform,
  options: NestAppOptions = {},
  module = appModule(),
  prepare?: Parameters<typeof startNestApp>[3],
) {
  const started = await startNestApp(module, platform, options, prepare);
  running.push(started);
  return { ...started, ledger: started.app.get(Ledger), handlers: started.app.get(ImageHandlers) };
}

const json = (path: string, body: unknown): TestRequest => ({
  method: 'POST',
  path,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe.each(PLATFORMS)('@pixhook/nestjs on %s', (platform) => {
  describe.each<NestAppOptions>([{}, { rawBody: true }, { bodyParser: false }])('created with %o', (options) => {
    it('runs the decorated methods of a provider, with its dependencies injected', async () => {
      const { send, ledger } = await start(platform, options);
      const request = delivery(createTestEvent('image.created', { id: 'img_1' }));
      const answer = await send(request);
      expect(answer.status).toBe(200);
      const id = JSON.parse(request.body).id as string;
      expect(ledger.entries).toEqual([`created ${id} ${request.headers['x-service-delivery']}`, 'any image.created']);
    });

    it('answers a forgery 400 SIGNATURE_MISMATCH and tells @OnWebhookError()', async () => {
      const { send, ledger } = await start(platform, options);
      const request = delivery(undefined, { secret: 'whsec_someone_else' });
      const answer = await send(request);
      expect(answer.status).toBe(400);
      expect(errorCode(answer.json)).toBe('SIGNATURE_MISMATCH');
      expect(answer.text).not.toContain(SECRET);
      expect(ledger.entries).toEqual([]);
      expect(ledger.errors).toEqual([`SIGNATURE_MISMATCH ${request.headers['x-service-delivery']}`]);
    });
  });

  it("keeps the app's other routes parsing JSON, and their rawBody with rawBody: true", async () => {
    const plain = await start(platform);
    const answer = await plain.send(json('/items', { name: 'a' }));
    expect(answer.status).toBe(201);
    expect(answer.json).toEqual({ received: { name: 'a' }, rawBody: null });

    const raw = await start(platform, { rawBody: true });
    const rawAnswer = await raw.send(json('/items', { name: 'b' }));
    expect(rawAnswer.json).toEqual({ received: { name: 'b' }, rawBody: '{"name":"b"}' });
  });

  it('runs an event once when the service delivers it twice, and again after a failure', async () => {
    const { send, ledger, handlers } = await start(platform);
    handlers.failuresLeft = 1;
    const request = delivery(createTestEvent('image.created'));
    const first = await send(request);
    expect(first.status).toBe(500);
    expect(errorCode(first.json)).toBe('HANDLER_FAILED');
    expect(first.text).not.toContain('the image index is down');
    expect(ledger.errors).toEqual([`HANDLER_FAILED ${request.headers['x-service-delivery']}`]);
    expect((await send(request)).status).toBe(200);
    expect((await send(request)).status).toBe(200);
    expect(ledger.entries.filter((entry) => entry.startsWith('created'))).toHaveLength(1);
  });

  it('dispatches an array of types to one method, and unknown types to @OnAnyWebhook() only', async () => {
    const { send, ledger } = await start(platform);
    expect((await send(delivery(createTestEvent('quota.exceeded')))).status).toBe(200);
    expect((await send(delivery(createTestEvent('quota.warned')))).status).toBe(200);
    expect((await send(delivery(createTestEvent('image.archived' as never)))).status).toBe(200);
    expect(ledger.entries).toEqual([
      'quota quota.exceeded',
      'any quota.exceeded',
      'quota quota.warned',
      'any quota.warned',
      'any image.archived',
    ]);
  });

  it("answers a handler's exception 500 HANDLER_FAILED whatever the app's global filters, guards, interceptors and pipes", async () => {
    @Catch()
    class EverythingIsFine implements ExceptionFilter {
      catch(_error: unknown, host: ArgumentsHost) {
        const response = host.switchToHttp().getResponse();
        if (platform === 'express') response.status(200).json({ fine: true });
        else response.status(200).send({ fine: true });
      }
    }
    class DenyAll implements CanActivate {
      canActivate(_context: ExecutionContext) {
        return false;
      }
    }
    class Wrap implements NestInterceptor {
      intercept(_context: ExecutionContext, next: CallHandler) {
        return next.handle().pipe(map((data) => ({ wrapped: data })));
      }
    }
    class Reject implements PipeTransform {
      transform() {
        throw new Error('no input accepted');
      }
    }
    const { send, ledger, handlers } = await start(platform, {}, appModule(), (app) => {
      app.useGlobalFilters(new EverythingIsFine());
      app.useGlobalGuards(new DenyAll());
      app.useGlobalInterceptors(new Wrap());
      app.useGlobalPipes(new Reject());
    });
    // The app's own route is in their hands: the guard refuses, the filter turns that into 200.
    expect((await send(json('/items', {}))).json).toEqual({ fine: true });

    handlers.failuresLeft = 1;
    const request = delivery();
    const failed = await send(request);
    expect(failed.status).toBe(500);
    expect(errorCode(failed.json)).toBe('HANDLER_FAILED');
    const delivered = await send(request);
    expect(delivered.status).toBe(200);
    expect(delivered.json).not.toHaveProperty('wrapped');
    expect(ledger.entries.filter((entry) => entry.startsWith('created'))).toHaveLength(1);
  });

  it('mounts the route at the path option, and answers nothing at the default path then', async () => {
    const { send, ledger } = await start(
      platform,
      {},
      appModule(PixhookModule.forRoot({ secret: SECRET, path: '/hooks/pixhook' })),
    );
    expect((await send({ ...delivery(), path: '/hooks/pixhook' })).status).toBe(200);
    // A trailing slash: Express tolerates it; Fastify follows its own ignoreTrailingSlash (off by default).
    expect((await send({ ...delivery(), path: '/hooks/pixhook/' })).status).toBe(platform === 'express' ? 200 : 404);
    expect((await send(delivery())).status).toBe(404);
    expect(ledger.entries.filter((entry) => entry.startsWith('created'))).toHaveLength(platform === 'express' ? 2 : 1);
  });

  describe('the tenant, with secrets looked up per tenant', () => {
    const SECRETS: Record<string, string> = { acme: 'whsec_nest_acme_7b2f', globex: 'whsec_nest_globex_3e8c' };
    const tenantWebhooks = () => recordingTenantWebhooks(SECRETS, { async: true });
    const to = (path: string, tenant: string) => ({ ...delivery(undefined, { secret: SECRETS[tenant] }), path });

    it.each<NestAppOptions>([{}, { rawBody: true }])(
      "path 'webhooks/:tenant' (no leading slash, as @Controller() takes it): the :tenant parameter chooses the secret (%o)",
      async (options) => {
        const { webhooks, tenants } = tenantWebhooks();
        const { send } = await start(
          platform,
          options,
          appModule(PixhookModule.forRoot({ webhooks, path: 'webhooks/:tenant' })),
        );
        expect((await send(to('/webhooks/acme', 'acme'))).status).toBe(200);
        expect(errorCode((await send(to('/webhooks/globex', 'acme'))).json)).toBe('SIGNATURE_MISMATCH');
        expect((await send(to('/webhooks/globex', 'globex'))).status).toBe(200);
        expect(tenants).toEqual(['acme', 'globex']);
      },
    );

    it('the tenant option replaces the default: a header here, with the secret lookup among the module options', async () => {
      const tenants: (string | undefined)[] = [];
      @Injectable()
      class TenantHandlers {
        @OnAnyWebhook()
        any(_event: AnyEvent, context: WebhookHandlerContext) {
          tenants.push(context.tenant);
        }
      }
      @Module({
        imports: [
          PixhookModule.forRoot({
            secret: (tenant) => SECRETS[tenant],
            tenant: (request: { headers: Record<string, string | string[] | undefined> }) =>
              request.headers['x-tenant'] as string | undefined,
          }),
        ],
        providers: [TenantHandlers],
      })
      class TenantModule {}
      const started = await startNestApp(TenantModule, platform);
      running.push(started);
      const { send } = started;
      const request = to('/webhooks', 'globex');
      expect((await send({ ...request, headers: { ...request.headers, 'x-tenant': 'globex' } })).status).toBe(200);
      expect(tenants).toEqual(['globex']);
    });

    it('a tenant option that throws, or answers no string, gives no tenant: 400 SIGNATURE_MISMATCH, the app goes on', async () => {
      await expectNoUnhandledRejection(async () => {
        for (const tenant of brokenTenantOptions(null)) {
          const { webhooks, tenants, causes } = tenantWebhooks();
          const { send } = await start(
            platform,
            {},
            appModule(PixhookModule.forRoot({ webhooks, path: '/webhooks/:tenant', tenant: tenant as never })),
          );
          const res = await send(to('/webhooks/acme', 'acme'));
          expect({ status: res.status, code: errorCode(res.json) }).toEqual({
            status: 400,
            code: 'SIGNATURE_MISMATCH',
          });
          expect(res.text).not.toContain('tenant parser bug');
          expect(tenants).toEqual([]);
          expect(causes).toEqual([expect.stringMatching(NO_TENANT_CAUSE)]);
        }
      });
    });
  });

  it('takes its options from forRootAsync({ imports, inject, useFactory }), the secret from ConfigService', async () => {
    const pixhook = PixhookModule.forRootAsync({
      imports: [ConfigModule.forRoot({ ignoreEnvFile: true, load: [() => ({ SIGNING_SECRET: SECRET })] })],
      inject: [ConfigService],
      useFactory: async (config: ConfigService) => ({
        secret: config.getOrThrow<string>('SIGNING_SECRET'),
        tolerance: 60,
      }),
    });
    const { send, ledger, app } = await start(platform, {}, appModule(pixhook));
    expect((await send(delivery())).status).toBe(200);
    expect(ledger.entries).toHaveLength(2);
    // The Webhooks the factory's options built is injectable, and it is the one that answered.
    const webhooks = app.get(Webhooks);
    expect(webhooks).toBeInstanceOf(Webhooks);
    const stale = await send(delivery(undefined, { timestamp: Math.floor(Date.now() / 1000) - 120 }));
    expect(errorCode(stale.json)).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
  });

  it('uses a Webhooks built elsewhere (forRoot({ webhooks })), adding the decorated methods to its handlers', async () => {
    const webhooks = new Webhooks({ secret: SECRET, store: new MemoryStore() });
    const seen: string[] = [];
    webhooks.on('image.deleted', (event) => void seen.push(event.id));
    const { send, ledger, app } = await start(platform, {}, appModule(PixhookModule.forRoot({ webhooks })));
    expect(app.get(Webhooks)).toBe(webhooks);
    expect((await send(delivery(createTestEvent('image.deleted')))).status).toBe(200);
    expect((await send(delivery(createTestEvent('image.created')))).status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(ledger.entries).toHaveLength(3);
  });

  it('makes the Webhooks injectable in any module (a global module)', async () => {
    @Injectable()
    class UsesWebhooks {
      constructor(readonly webhooks: Webhooks) {}
    }
    @Module({ providers: [UsesWebhooks], exports: [UsesWebhooks] })
    class FeatureModule {}
    @Module({ imports: [PixhookModule.forRoot({ secret: SECRET }), FeatureModule] })
    class AppModule {}
    const started = await startNestApp(AppModule, platform);
    running.push(started);
    const webhooks = started.app.get(UsesWebhooks).webhooks;
    expect(webhooks).toBeInstanceOf(Webhooks);
    const request = delivery();
    expect(() => webhooks.verify(request.body, request.headers)).not.toThrow();
  });

  it('runs in a Test.createTestingModule() app, with a provider overridden as tests do', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [appModule()] })
      .overrideProvider(Ledger)
      .useValue({
        entries: ['overridden'],
        errors: [],
        add(entry: string) {
          this.entries.push(entry);
        },
      })
      .compile();
    const app = moduleRef.createNestApplication(platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
      logger: false,
    });
    running.push(app);
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as { port: number };
    expect((await httpSend(port, delivery(createTestEvent('quota.warned')))).status).toBe(200);
    expect(app.get(Ledger).entries).toEqual(['overridden', 'quota quota.warned', 'any quota.warned']);
  });
});

describe('@pixhook/nestjs: where decorated methods may live', () => {
  it('on a controller, and once for one instance reached under two tokens (useExisting)', async () => {
    const calls: string[] = [];
    @Controller('things')
    class ThingsController {
      @OnWebhook('api_key.revoked')
      revoked(event: WebhookEventOf<'api_key.revoked'>) {
        calls.push(`controller ${event.type}`);
      }
    }
    @Injectable()
    class Aliased {
      @OnWebhook('api_key.revoked')
      revoked() {
        calls.push('aliased');
      }
    }
    @Module({
      imports: [PixhookModule.forRoot({ secret: SECRET })],
      controllers: [ThingsController],
      providers: [Aliased, { provide: 'ALIAS', useExisting: Aliased }],
    })
    class AppModule {}
    const started = await startNestApp(AppModule, 'express');
    running.push(started);
    expect((await started.send(delivery(createTestEvent('api_key.revoked')))).status).toBe(200);
    expect(calls.sort()).toEqual(['aliased', 'controller api_key.revoked']);
  });
});

describe('@pixhook/nestjs on express: the raw bytes', () => {
  it('answers 500 RAW_BODY_UNAVAILABLE with the fix when a middleware of the app read the body first', async () => {
    const { send, ledger } = await start('express', {}, appModule(), (app) => {
      app.use(function readsEverything(req: NodeJS.ReadableStream, _res: unknown, next: () => void) {
        req.resume();
        req.on('end', next);
      });
    });
    const answer = await send(delivery());
    expect(answer.status).toBe(500);
    expect(errorCode(answer.json)).toBe('RAW_BODY_UNAVAILABLE');
    expect((answer.json as { error: { message: string } }).error.message).toMatch(/skip the webhook path|req\.rawBody/);
    expect(ledger.entries).toEqual([]);
  });

  it('uses req.rawBody kept by a middleware that reads the body first', async () => {
    const { send, ledger } = await start('express', {}, appModule(), (app) => {
      app.use(function keepsRaw(req: NodeJS.ReadableStream & { rawBody?: Buffer }, _res: unknown, next: () => void) {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          req.rawBody = Buffer.concat(chunks);
          next();
        });
      });
    });
    expect((await send(delivery())).status).toBe(200);
    expect(ledger.entries).toHaveLength(2);
  });
});

describe('@pixhook/nestjs without an HTTP platform (a worker)', () => {
  it('adds the decorated methods, so webhooks.handle() runs them', async () => {
    const context = await NestFactory.createApplicationContext(appModule(), { logger: false });
    running.push(context);
    const webhooks = context.get(Webhooks);
    const request = delivery(createTestEvent('image.created'));
    const answer = await webhooks.handle({ method: 'POST', headers: request.headers, body: request.body });
    expect(answer.status).toBe(200);
    expect(context.get(Ledger).entries).toHaveLength(2);
  });
});

describe('@pixhook/nestjs refuses at startup', () => {
  const startupError = async (module: unknown, platform: NestPlatform = 'express') => {
    const error = await startNestApp(module, platform).then(
      (started) => {
        running.push(started);
        return undefined;
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    return (error as Error).message;
  };

  it('an empty secret, as new Webhooks() does', async () => {
    expect(await startupError(appModule(PixhookModule.forRoot({ secret: '' })))).toMatch(/secret/);
  });

  it('a misspelled option, naming the right one', async () => {
    const options = { secret: SECRET, pth: '/hooks' } as never;
    expect(await startupError(appModule(PixhookModule.forRoot(options)))).toMatch(
      /PixhookModule\.forRoot\(options\) has no option "pth".*path/,
    );
  });

  it('a path that is not a plain path', async () => {
    for (const path of ['/hooks/:', '/hooks/a:b', '/hooks/:9', '/a*', '/(.*)', '']) {
      expect(await startupError(appModule(PixhookModule.forRoot({ secret: SECRET, path })))).toMatch(
        /^pixhook: PixhookModule: path must be a path such as "\/webhooks" or "\/webhooks\/:tenant"/,
      );
    }
  });

  it('a tenant option that is not a function', async () => {
    for (const tenant of ['acme', null, { param: 'tenant' }]) {
      expect(await startupError(appModule(PixhookModule.forRoot({ secret: SECRET, tenant } as never)))).toMatch(
        /^pixhook: PixhookModule: tenant takes a function/,
      );
    }
    expect(
      await startupError(appModule(PixhookModule.forRoot({ secret: SECRET, tenants: () => 'a' } as never))),
    ).toMatch(/no option "tenants".*Did you mean "tenant"\?/);
  });

  it('a Webhooks and the options of another, together', async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const options = { webhooks, secret: SECRET } as never;
    expect(await startupError(appModule(PixhookModule.forRoot(options)))).toMatch(/either webhooks or the options/);
  });

  it.each(PLATFORMS)('a decorated method on a request-scoped provider (%s)', async (platform) => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @OnWebhook('image.created')
      created() {}
    }
    @Module({ imports: [PixhookModule.forRoot({ secret: SECRET })], providers: [PerRequest] })
    class AppModule {}
    expect(await startupError(AppModule, platform)).toMatch(/PerRequest\.created .*request-scoped/);
  });

  it('a class with decorated methods that Nest builds twice (listed in two modules)', async () => {
    @Module({ providers: [Ledger, ImageHandlers] })
    class First {}
    @Module({ providers: [Ledger, ImageHandlers] })
    class Second {}
    @Module({ imports: [PixhookModule.forRoot({ secret: SECRET }), First, Second] })
    class AppModule {}
    expect(await startupError(AppModule)).toMatch(
      /ImageHandlers\.created .*built its class twice \(in First and in Second\)/,
    );
  });

  it('an event type pixhook does not know, when the class is defined', () => {
    expect(() => OnWebhook('image.craeted' as never)).toThrow(/not an event type pixhook knows/);
    expect(() => OnWebhook([])).toThrow(/at least one event type/);
  });
});
