/**
 * Ends the command quietly when whoever reads its output goes away (`pixhook listen | head -5`):
 * a write then fails with EPIPE, which would otherwise crash with a stack trace. There is nobody
 * left to tell, so nothing is printed. The exit code is the check's result when the command knew
 * it already (`send` sets it before printing the answer), otherwise 0, as for a command that
 * simply stopped because its reader stopped.
 */
export function exitQuietlyWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit();
    });
  }
}
