import { readFile } from 'node:fs/promises';
import { UsageError } from './errors.js';

async function readStdin(what: string): Promise<Buffer> {
  if (process.stdin.isTTY) {
    throw new UsageError(`No ${what}: pass a file, or pipe it on stdin.`);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The bytes of a file, or of stdin when `file` is undefined or `-`. The bytes are kept exactly:
 * a signature covers every one of them.
 */
export async function readBytes(file: string | undefined, what: string): Promise<Buffer> {
  if (file === undefined || file === '-') return readStdin(what);
  try {
    return await readFile(file);
  } catch (error) {
    throw new UsageError(`Cannot read the ${what} from ${file}: ${(error as NodeJS.ErrnoException).code ?? error}.`);
  }
}

/** A JSON object from a file (or stdin with `-`), for `data.object`. */
export async function readJsonObject(file: string, what: string): Promise<Record<string, unknown>> {
  const text = (await readBytes(file, what)).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`The ${what} in ${file} is not JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`The ${what} in ${file} must be a JSON object.`);
  }
  return value as Record<string, unknown>;
}
