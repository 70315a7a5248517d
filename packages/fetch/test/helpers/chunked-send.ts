import net from 'node:net';
import type { TestResponse } from '@pixhook/test-helpers/adapters';

/**
 * POSTs `size` bytes chunked (no Content-Length) over a raw socket and then holds the body open,
 * never sending its last chunk: only a server that enforces the limit while reading can answer.
 */
export function sendUnfinishedBody(
  port: number,
  path: string,
  headers: Record<string, string>,
  size: number,
): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let answered = false;
    const finish = (response: TestResponse) => {
      answered = true;
      socket.destroy();
      resolve(response);
    };
    const tryParse = (closed: boolean) => {
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) return;
      const [statusLine, ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const head: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        head[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const content = received.subarray(end + 4);
      const length = head['content-length'] === undefined ? undefined : Number(head['content-length']);
      if (length === undefined ? !closed : content.byteLength < length) return;
      const text = content.subarray(0, length).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      finish({ status: Number(statusLine?.split(' ')[1]), headers: head, text, json });
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      tryParse(false);
    });
    socket.on('close', () => {
      if (!answered) tryParse(true);
      if (!answered)
        reject(new Error(`connection closed without an answer: ${received.toString('latin1').slice(0, 200)}`));
    });
    // The server may stop reading and reset the connection once it has answered.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    socket.on('connect', () => {
      const names = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(
        `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ntransfer-encoding: chunked\r\n${names.join('')}\r\n`,
      );
      for (let sent = 0; sent < size; sent += 65_536) {
        const chunk = Buffer.alloc(Math.min(65_536, size - sent), 0x61);
        socket.write(`${chunk.byteLength.toString(16)}\r\n`);
        socket.write(chunk);
        socket.write('\r\n');
      }
    });
  });
}
