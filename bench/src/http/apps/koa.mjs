// The Koa servers: only this framework (and raw-body, for the baseline) is loaded in their process.
import { webhookMiddleware } from '@pixhook/koa';
import Koa from 'koa';
import getRawBody from 'raw-body';
import { handWritten } from '../baseline.mjs';
import { LIMIT, OK, PATH } from './shared.mjs';

const VARIANTS = {
  bare(app) {
    app.use(async (ctx) => {
      ctx.type = 'application/json';
      ctx.body = OK;
    });
  },
  baseline(app) {
    app.use(async (ctx) => {
      if (ctx.path !== PATH || ctx.method !== 'POST') return;
      const raw = await getRawBody(ctx.req, { limit: LIMIT, length: ctx.get('content-length') });
      const status = handWritten(raw, ctx.headers);
      ctx.status = status;
      ctx.body = status === 200 ? { received: true } : { error: 'invalid' };
    });
  },
  pixhook(app, webhooks) {
    app.use(webhookMiddleware(webhooks, { path: PATH }));
  },
};

/** The request listener of one variant, for `http.createServer`. */
export function listener(variant, webhooks) {
  const app = new Koa();
  VARIANTS[variant](app, webhooks);
  return app.callback();
}
