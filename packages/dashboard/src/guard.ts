import type { IncomingMessage } from 'node:http';

/**
 * Why a request to the dashboard's page or API must be refused, or undefined. The dashboard holds a
 * signing secret and sends signed deliveries, so only its own page may drive it:
 * - the `Host` must be the dashboard's own address, so a site that rebinds its DNS name to
 *   127.0.0.1 (DNS rebinding) gets nothing;
 * - an `Origin`, when sent, must be the dashboard's own, and a state-changing `POST` must carry one
 *   (browsers always send it on POST), so a page the developer visits cannot post to it;
 * - `Sec-Fetch-Site`, when sent, must say the request came from the dashboard itself or from the
 *   address bar.
 * The inspector's receiver path is not guarded: anything may deliver to a receiver.
 *
 * @example
 * refusal(req, 4343) // 'Requests from other origins are refused …' for Origin: https://evil.example
 */
export function refusal(req: IncomingMessage, port: number): string | undefined {
  const hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  const host = req.headers.host;
  if (host === undefined || !hosts.includes(host.toLowerCase())) {
    return `The dashboard answers only requests addressed to ${hosts.join(' or ')} (the Host header), so that no other site can reach it by rebinding its DNS name.`;
  }
  const origin = req.headers.origin;
  const origins = hosts.map((name) => `http://${name}`);
  if (origin !== undefined && !origins.includes(origin.toLowerCase())) {
    return 'Requests from other origins are refused: only the dashboard’s own page may use its API.';
  }
  if (req.method === 'POST' && origin === undefined) {
    return 'A request that changes the dashboard must come from its page (an Origin header of the dashboard).';
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return 'Requests from other sites are refused: only the dashboard’s own page may use its API.';
  }
  return undefined;
}
