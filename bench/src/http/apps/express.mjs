// The Express servers: only this framework (and Octokit, for its variant) is loaded in their process.
import { createNodeMiddleware, Webhooks as OctokitWebhooks } from '@octokit/webhooks';
import { webhookMiddleware } from '@pixhook/express';
import express from 'express';
import { SECRET } from '../../payloads.mjs';
import { handWritten, handWrittenHandler } from '../baseline.mjs';
import { LIMIT, OK, PATH } from './shared.mjs';

const VARIANTS = {
  bare(app) {
    app.post(PATH, (_req, res) => res.type('application/json').send(OK));
  },
  baseline(app) {
    app.post(PATH, express.raw({ type: 'application/json', limit: LIMIT }), (req, res) => {
      const status = handWritten(req.body, req.headers);
      res.status(status).json(status === 200 ? { received: true } : { error: 'invalid' });
    });
  },
  pixhook(app, webhooks) {
    app.post(PATH, webhookMiddleware(webhooks));
  },
  octokit(app) {
    const webhooks = new OctokitWebhooks({ secret: SECRET });
    webhooks.on('issues', handWrittenHandler);
    app.use(createNodeMiddleware(webhooks, { path: PATH }));
  },
};

/** The request listener of one variant, for `http.createServer`. */
export function listener(variant, webhooks) {
  const app = express();
  VARIANTS[variant](app, webhooks);
  return app;
}
