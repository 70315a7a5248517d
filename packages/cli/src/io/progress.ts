import type { AttemptOutcome } from '../deliver.js';
import { formatDuration } from '../schedule.js';
import type { SimulationUpdate } from '../simulate-delivery.js';
import { escapeText } from './escape.js';
import { outcomeHint } from './hints.js';
import { errorCode, formatStatus, pc } from './output.js';

/** How one attempt ended, in a few words. */
export function describeOutcome(outcome: AttemptOutcome, deadlineSeconds: number): string {
  if (outcome.status !== undefined) {
    const code = errorCode(outcome.body);
    return `${formatStatus(outcome.status)}${code ? ` ${escapeText(code)}` : ''} in ${formatDuration(outcome.ms)}`;
  }
  if (outcome.failure === 'timeout') return pc.red(`no answer within the ${deadlineSeconds} s deadline`);
  return pc.red(`could not connect (${escapeText(outcome.detail)})`);
}

/**
 * Progress of `simulate` on a stream. On a terminal one live line is rewritten (the attempt in
 * flight, then a countdown to the next retry); elsewhere every step is a plain line, for logs.
 */
export function progressReporter(
  stream: NodeJS.WriteStream,
  options: { url: string; timeScale: number; deadlineSeconds: number },
): { onProgress: (update: SimulationUpdate) => void; stop: () => void } {
  const live = stream.isTTY === true;
  let countdown: NodeJS.Timeout | undefined;
  let lastDelay = 0;
  const hinted = new Set<string>();

  const clearLive = () => {
    if (countdown) clearInterval(countdown);
    countdown = undefined;
    if (live) {
      stream.clearLine(0);
      stream.cursorTo(0);
    }
  };
  const scaled = (realMs: number) =>
    options.timeScale === 1 ? '' : pc.dim(` (${formatDuration(realMs)} at time scale ${options.timeScale})`);

  const onProgress = (update: SimulationUpdate) => {
    if (update.kind === 'wait') {
      lastDelay = update.delaySeconds;
      const next = `next retry, attempt ${update.nextAttempt}/${update.maxAttempts}, in`;
      if (!live) {
        stream.write(`  ${next} ${formatDuration(update.delaySeconds * 1000)}${scaled(update.realMs)}\n`);
        return;
      }
      const end = performance.now() + update.realMs;
      const draw = () => {
        const left = Math.max(0, end - performance.now()) * options.timeScale;
        stream.clearLine(0);
        stream.cursorTo(0);
        stream.write(`  ${next} ${formatDuration(Math.ceil(left / 1000) * 1000)}${scaled(update.realMs)}`);
      };
      draw();
      countdown = setInterval(draw, 100);
    } else if (update.kind === 'attempt') {
      clearLive();
      if (live) stream.write(`attempt ${update.attempt}/${update.maxAttempts} ${pc.dim('… waiting for an answer')}`);
    } else {
      clearLive();
      const after = update.attempt === 1 ? '' : pc.dim(`  (retry after ${formatDuration(lastDelay * 1000)})`);
      stream.write(
        `${update.outcome.ok ? pc.green('✓') : pc.red('✗')} attempt ${update.attempt}/${update.maxAttempts}  ${describeOutcome(update.outcome, options.deadlineSeconds)}${after}\n`,
      );
      // Once per kind of failure: seven attempts refused need one explanation.
      const hint = outcomeHint(update.outcome, options.url);
      if (hint && !hinted.has(hint)) {
        hinted.add(hint);
        stream.write(`  ${pc.yellow('hint:')} ${escapeText(hint)}\n`);
      }
    }
  };
  return { onProgress, stop: clearLive };
}
