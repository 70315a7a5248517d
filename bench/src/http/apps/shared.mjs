/** The webhook route of every server. */
export const PATH = '/webhooks';
/** What the bare routes answer. */
export const OK = '{"received":true}';
/** The body limit of every server (pixhook's default). */
export const LIMIT = 1024 * 1024;
