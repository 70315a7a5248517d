import { createHash } from 'node:crypto';
import type { SendCommand } from './client.js';

/**
 * Sends `EVAL script …` as `EVALSHA sha1(script) …`: Redis then neither receives the script's text
 * nor hashes it on every command (two per delivery). When Redis does not know the script yet (first
 * use, a restart, `SCRIPT FLUSH`, a failover) it answers `NOSCRIPT`, and the command is sent once
 * more as the `EVAL` it stands for, which loads the script for the next ones. Any other command is
 * sent as it is.
 */
export function withScriptCache(send: SendCommand): SendCommand {
  const shas = new Map<string, string>();
  return (args) => {
    if (args[0] !== 'EVAL' || typeof args[1] !== 'string') return send(args);
    const script = args[1];
    let sha = shas.get(script);
    if (sha === undefined) {
      sha = createHash('sha1').update(script).digest('hex');
      shas.set(script, sha);
    }
    let sent: Promise<unknown>;
    try {
      sent = send(['EVALSHA', sha, ...args.slice(2)]);
    } catch {
      return send(args);
    }
    return sent.catch((error: unknown) => {
      if (String((error as { message?: unknown })?.message ?? error).startsWith('NOSCRIPT')) return send(args);
      throw error;
    });
  };
}
