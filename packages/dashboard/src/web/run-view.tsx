import { RETRY_DELAYS_SECONDS } from '@pixhook/cli/schedule';
import type { ScheduleRun, ScheduleStep } from '../protocol.js';
import { formatMs, formatSeconds } from './format.js';

interface Props {
  run: ScheduleRun;
  onShowAttempt(attemptId: string): void;
}

function stepResult(step: ScheduleStep): string {
  switch (step.state) {
    case 'pending':
      return 'pending';
    case 'waiting':
      return `waiting ${formatSeconds(step.delaySeconds)} (${formatMs(step.realMs)} at this scale)`;
    case 'sending':
      return 'sending…';
    default:
      if (step.failure === 'timeout') return 'timeout';
      if (step.failure === 'network') return 'network error';
      return [step.status, step.code].filter((part) => part !== undefined).join(' ');
  }
}

function outcome(run: ScheduleRun): string {
  const failed = run.steps.filter((step) => step.state === 'failed').length;
  switch (run.state) {
    case 'running':
      return 'running…';
    case 'delivered': {
      const delivered = run.steps.find((step) => step.state === 'ok');
      return `delivered at attempt ${delivered?.attempt ?? '?'}`;
    }
    case 'auto-disabled': {
      // In the spec's words (part 3): after "6 failed delivery attempts", "after the last retry delay
      // has elapsed and the attempt has failed". Its six delays make that the first attempt and six retries.
      const retries = failed - 1;
      const spec = retries === RETRY_DELAYS_SECONDS.length ? `, the spec's "${retries} failed delivery attempts"` : '';
      return `auto-disabled: the attempt after the last retry delay failed too (the first attempt and ${retries} ${
        retries === 1 ? 'retry' : 'retries'
      } failed${spec}). The service disables the endpoint and emails the account owner.`;
    }
    case 'stopped':
      return `stopped after ${failed} failed attempts`;
  }
}

/** The timeline's spacing: a log scale, so 1 min and 24 h both fit on one line. */
function grow(step: ScheduleStep): number {
  return step.attempt === 1 ? 0 : 1 + Math.log10(1 + step.delaySeconds / 60);
}

/** One play of the retry schedule: its event, a timeline of its attempts, and how it ended. */
export function RunView({ run, onShowAttempt }: Props) {
  return (
    <article class="run" data-testid="run" data-state={run.state}>
      <h3 class="run-heading">
        <span class="mono">{run.eventType}</span>{' '}
        <span class="ids mono">
          <span>
            <span class="label">event</span> {run.eventId}
          </span>{' '}
          <span>
            <span class="label">delivery</span> {run.deliveryId}
          </span>{' '}
          <span>
            <span class="label">time scale</span> {run.timeScale}
          </span>
        </span>
      </h3>
      {/* biome-ignore lint/a11y/noRedundantRoles: Safari drops a list's semantics when its bullets are styled away. */}
      <ol class="timeline" role="list" aria-label="Retry timeline">
        {run.steps.map((step) => (
          <li
            key={step.attempt}
            class="step"
            data-testid="timeline-step"
            data-attempt={step.attempt}
            data-state={step.state}
            style={{ flexGrow: grow(step), '--wait': `${step.realMs}ms` }}
          >
            <span class="step-delay">{step.attempt > 1 ? `after ${formatSeconds(step.delaySeconds)}` : 'at once'}</span>
            <span class="step-track" aria-hidden="true">
              <span class="step-dot" />
            </span>
            {step.attemptId && step.state !== 'sending' ? (
              <button
                type="button"
                class="step-name link"
                title={`Show attempt ${step.attempt} in the delivery log`}
                onClick={() => onShowAttempt(step.attemptId ?? '')}
              >
                Attempt {step.attempt}
              </button>
            ) : (
              <span class="step-name">Attempt {step.attempt}</span>
            )}
            <span class="step-result">{stepResult(step)}</span>
          </li>
        ))}
      </ol>
      <p class="run-outcome" data-testid="run-outcome" data-state={run.state}>
        {outcome(run)}
      </p>
    </article>
  );
}
