// Child process: the load generator. `{ cmd: 'run', port, scheme, seconds, connections, maxRequests }`
// runs autocannon against 127.0.0.1:port with a freshly signed 1 KiB delivery (unique event id) on
// every request, bounded in time and count, and answers with its figures. `{ cmd: 'burst', … }`
// sends a fixed number of large deliveries at once (the memory scenario).
import http from 'node:http';
import autocannon from 'autocannon';
import { serve } from '../children.mjs';
import { bodyFrom, bodyTemplate, SCHEMES } from '../payloads.mjs';

const template = bodyTemplate(1024, 'ascii');
// Unique across runs of this process, so the idempotency store never sees an id twice.
let nextId = 1;

function run({ port, scheme, seconds, connections, maxRequests }) {
  const sign = SCHEMES[scheme];
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections,
        pipelining: 1,
        duration: seconds,
        maxOverallRequests: maxRequests,
        timeout: 10,
        requests: [
          {
            method: 'POST',
            path: '/webhooks',
            setupRequest(request) {
              const body = bodyFrom(template, nextId++);
              return { ...request, headers: sign(body), body };
            },
          },
        ],
      },
      (error, result) => {
        if (error) reject(error);
        else
          resolve({
            seconds: result.duration,
            requests: result.requests.total,
            rps: result.requests.total / result.duration,
            ok: result['2xx'],
            non2xx: result.non2xx,
            errors: result.errors,
            timeouts: result.timeouts,
            p50: result.latency.p50,
            p99: result.latency.p99,
          });
      },
    );
  });
}

function post(agent, port, body, headers) {
  return new Promise((resolve) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks',
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': body.length },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode));
      },
    );
    request.on('error', (error) => resolve(error.code ?? 'error'));
    request.end(body);
  });
}

/** `count` deliveries of `bytes` each, all sent at once on their own connections; answers their statuses. */
async function burst({ port, count, bytes }) {
  const template = bodyTemplate(bytes, 'utf8');
  const agent = new http.Agent({ keepAlive: false, maxSockets: count });
  const bodies = Array.from({ length: count }, () => bodyFrom(template, nextId++));
  const statuses = await Promise.all(bodies.map((body) => post(agent, port, body, SCHEMES.pixhook(body))));
  agent.destroy();
  return { statuses };
}

serve(async (message) => {
  if (message.cmd === 'run') return run(message);
  if (message.cmd === 'burst') return burst(message);
  throw new Error(`unknown command ${message.cmd}`);
});
process.send({ ready: true });
