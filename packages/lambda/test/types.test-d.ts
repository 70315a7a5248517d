/**
 * What editors must infer for @pixhook/lambda (vitest typecheck): the handler fits the
 * `@types/aws-lambda` handler type of every source it answers, gives each its own result type,
 * and handlers see `{ event, context }` as `context.request`; a Webhooks typed for another
 * framework's request is refused.
 */
import type { IncomingMessage } from 'node:http';
import { Webhooks, type WebhooksLike } from '@pixhook/core';
import {
  createLambdaHandler,
  type LambdaAlbResult,
  type LambdaHandler,
  type LambdaHttpEvent,
  type LambdaHttpResult,
  type LambdaProxyResult,
  type LambdaRequest,
} from '@pixhook/lambda';
import type {
  ALBEvent,
  ALBHandler,
  ALBResult,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyEventV2WithJWTAuthorizer,
  APIGatewayProxyHandler,
  APIGatewayProxyHandlerV2,
  APIGatewayProxyHandlerV2WithJWTAuthorizer,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  APIGatewayProxyWithCognitoAuthorizerHandler,
  Context,
  Handler,
  LambdaFunctionURLEvent,
  LambdaFunctionURLHandler,
  SQSEvent,
} from 'aws-lambda';
import type { Request as ExpressRequest } from 'express';
import { describe, expectTypeOf, it } from 'vitest';

type Events = { 'image.created': { url: string } };

describe('@pixhook/lambda types', () => {
  const webhooks = new Webhooks<Events, LambdaRequest>({ secret: 'whsec_types' });
  const handler = createLambdaHandler(webhooks);

  it('createLambdaHandler returns a LambdaHandler', () => {
    expectTypeOf(handler).toEqualTypeOf<LambdaHandler>();
    expectTypeOf(createLambdaHandler(webhooks, {})).toEqualTypeOf<LambdaHandler>();
  });

  it('fits the handler type of every source it answers', () => {
    expectTypeOf(handler).toExtend<APIGatewayProxyHandler>();
    expectTypeOf(handler).toExtend<APIGatewayProxyHandlerV2>();
    expectTypeOf(handler).toExtend<LambdaFunctionURLHandler>();
    expectTypeOf(handler).toExtend<ALBHandler>();
    expectTypeOf(handler).toExtend<Handler<LambdaHttpEvent, LambdaHttpResult>>();
    // Routes with an authorizer too: their events are the plain ones with more in requestContext.
    expectTypeOf(handler).toExtend<APIGatewayProxyHandlerV2WithJWTAuthorizer>();
    expectTypeOf(handler).toExtend<APIGatewayProxyWithCognitoAuthorizerHandler>();
    const rest: APIGatewayProxyHandler = handler;
    const url: LambdaFunctionURLHandler = handler;
    const alb: ALBHandler = handler;
    expectTypeOf([rest, url, alb]).not.toBeAny();
  });

  it('gives each event type its own result type, which fits what AWS types for that source', async () => {
    const context = {} as Context;
    const fromRest = await handler({} as APIGatewayProxyEvent, context);
    expectTypeOf(fromRest).toEqualTypeOf<LambdaProxyResult>();
    expectTypeOf(fromRest).toExtend<APIGatewayProxyResult>();
    const fromHttpApi = await handler({} as APIGatewayProxyEventV2, context);
    expectTypeOf(fromHttpApi).toEqualTypeOf<LambdaProxyResult>();
    expectTypeOf(fromHttpApi).toExtend<APIGatewayProxyStructuredResultV2>();
    expectTypeOf(await handler({} as LambdaFunctionURLEvent, context)).toEqualTypeOf<LambdaProxyResult>();
    expectTypeOf(
      await handler({} as APIGatewayProxyEventV2WithJWTAuthorizer, context),
    ).toEqualTypeOf<LambdaProxyResult>();
    const fromAlb = await handler({} as ALBEvent, context);
    expectTypeOf(fromAlb).toEqualTypeOf<LambdaAlbResult>();
    expectTypeOf(fromAlb).toExtend<ALBResult>();
    expectTypeOf(fromAlb.statusDescription).toEqualTypeOf<string>();
    expectTypeOf(await handler({} as LambdaHttpEvent, context)).toEqualTypeOf<LambdaHttpResult>();
  });

  it('refuses an event of another trigger, and a call without a context', () => {
    // @ts-expect-error an SQS batch is not an HTTP request
    handler({} as SQSEvent, {} as Context);
    // @ts-expect-error Lambda always passes the context
    handler({} as APIGatewayProxyEvent);
  });

  it('handlers get { event, context } as context.request', () => {
    webhooks.on('image.created', (event, context) => {
      expectTypeOf(context.request).toEqualTypeOf<LambdaRequest>();
      expectTypeOf(context.request.event).toEqualTypeOf<LambdaHttpEvent>();
      expectTypeOf(context.request.context).toEqualTypeOf<Context>();
      expectTypeOf(context.request.context.getRemainingTimeInMillis).returns.toEqualTypeOf<number>();
      expectTypeOf(event.data.object.url).toEqualTypeOf<string>();
    });
  });

  it('a Webhooks for one source types the event as that source', () => {
    const urlOnly = new Webhooks<Events, LambdaRequest<LambdaFunctionURLEvent>>({ secret: 'whsec_types' });
    urlOnly.on('image.created', (_event, { request }) => {
      expectTypeOf(request.event.requestContext.http.sourceIp).toEqualTypeOf<string>();
    });
    expectTypeOf(createLambdaHandler(urlOnly)).toEqualTypeOf<LambdaHandler>();
  });

  it('accepts the default request type and anything with handle()', () => {
    createLambdaHandler(new Webhooks({ secret: 's' }));
    createLambdaHandler(new Webhooks<Events>({ secret: 's' }));
    const other: WebhooksLike<LambdaRequest> = { handle: async () => ({ status: 200, headers: {}, body: '' }) };
    createLambdaHandler(other);
  });

  it('refuses a Webhooks typed for another framework, and what is not a Webhooks', () => {
    // @ts-expect-error handlers would be told they get a fetch Request
    createLambdaHandler(new Webhooks<Events, Request>({ secret: 's' }));
    // @ts-expect-error nor an Express req
    createLambdaHandler(new Webhooks<Events, ExpressRequest>({ secret: 's' }));
    // @ts-expect-error nor a Node IncomingMessage
    createLambdaHandler(new Webhooks<Events, IncomingMessage>({ secret: 's' }));
    // @ts-expect-error nor the bare event: handlers get { event, context }
    createLambdaHandler(new Webhooks<Events, APIGatewayProxyEventV2>({ secret: 's' }));
    // @ts-expect-error a handler needs a Webhooks
    createLambdaHandler({});
    // @ts-expect-error options are an object
    createLambdaHandler(webhooks, 'fast');
    // @ts-expect-error there is no path option
    createLambdaHandler(webhooks, { path: '/webhooks' });
    // @ts-expect-error the tenant is a function of { event, context }
    createLambdaHandler(webhooks, { tenant: 'acme' });
  });

  it('the tenant option takes { event, context }, narrowed to one source if the app wants', () => {
    createLambdaHandler(webhooks, { tenant: ({ event }) => ('rawPath' in event ? event.rawPath : event.path) });
    const urlOnly = new Webhooks<Events, LambdaRequest<LambdaFunctionURLEvent>>({ secret: () => 's' });
    createLambdaHandler(urlOnly, {
      tenant: (request: LambdaRequest<LambdaFunctionURLEvent>) => request.event.rawPath.split('/').at(-1),
    });
  });
});
