// Child process: one HTTP server from apps.mjs, configured by argv[2] (JSON). Answers IPC
// `{ cmd: 'cpu' }` and `{ cmd: 'close' }`; its first message is `{ ready: true, port }`.
import { serve } from '../children.mjs';
import { startServer } from './apps.mjs';

const options = JSON.parse(process.argv[2]);
try {
  const server = await startServer(options);
  serve(async ({ cmd }) => {
    if (cmd === 'cpu') {
      // CPU time of this server process in µs: its cost per request, whatever else the machine runs.
      const { user, system } = process.cpuUsage();
      // Statements sent to Postgres so far (its servers only).
      return {
        cpu: user + system,
        handled: server.handled(),
        queries: server.queries?.(),
        // Commands sent to Redis so far (its RedisStore and BullMQ servers only).
        redisCommands: server.redisCommands?.(),
        // Archive writes that failed so far (the inbox scenario's servers only).
        archiveFailures: server.archiveFailures?.(),
      };
    }
    if (cmd === 'close') {
      await server.close();
      return { closed: true };
    }
    throw new Error(`unknown command ${cmd}`);
  });
  process.send({ ready: true, port: server.port });
} catch (error) {
  process.send({ error: error?.stack ?? String(error) });
  process.exit(1);
}
