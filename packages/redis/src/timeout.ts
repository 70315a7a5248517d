/**
 * Settles like `promise`, or rejects after `ms` if it has not settled by then. The command itself is
 * not cancelled (clients cannot unsend one), so callers must make a late success harmless.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
