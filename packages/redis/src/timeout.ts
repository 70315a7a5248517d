/**
 * Settles like `promise`, or rejects after `ms` if it has not settled by then. The command itself is
 * not cancelled (clients cannot unsend one), so callers must make a late success harmless. One
 * promise and one timer per command (not `Promise.race` and `finally`: three promises more).
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(message)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
