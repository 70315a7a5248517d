import { Fragment } from 'preact';
import { useId, useState } from 'preact/hooks';
import type { Snapshot } from '../protocol.js';
import { EnableEndpoint } from './endpoint.js';
import { formatSeconds } from './format.js';
import { RunView } from './run-view.js';
import type { Dashboard } from './use-dashboard.js';

interface Props {
  snapshot: Snapshot;
  dashboard: Dashboard;
  onShowAttempt(attemptId: string): void;
  /** Why nothing can be sent now (the endpoint is auto-disabled), or undefined. */
  cannotSend: string | undefined;
}

/** Plays the service's retry schedule against the receiver, sped up, and shows each run. */
export function Schedule({ snapshot, dashboard, onShowAttempt, cannotSend }: Props) {
  const id = useId();
  const { defaults, eventTypes } = snapshot;
  const [type, setType] = useState(eventTypes[0] ?? '');
  const [timeScale, setTimeScale] = useState(String(defaults.timeScale));
  const [maxAttempts, setMaxAttempts] = useState(String(defaults.maxAttempts));
  const [deadline, setDeadline] = useState(String(defaults.deadlineSeconds));
  const [busy, setBusy] = useState(false);
  const runs = snapshot.runs.slice().reverse();
  const running = runs[0]?.state === 'running';

  const play = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    await dashboard.act('/api/schedule', {
      type,
      object: snapshot.samples[type] ?? {},
      timeScale: Number(timeScale),
      maxAttempts: Number(maxAttempts),
      deadlineSeconds: Number(deadline),
    });
    setBusy(false);
  };

  return (
    <>
      <section class="card" aria-labelledby={`${id}-heading`}>
        <h2 id={`${id}-heading`}>Retry schedule</h2>
        <p class="note">
          When an attempt fails (no 2xx within the deadline), the service retries after{' '}
          {defaults.retryDelaysSeconds.map((delay, i) => (
            <Fragment key={delay}>
              {i > 0 && ', '}
              <span class="nowrap">{formatSeconds(delay)}</span>
            </Fragment>
          ))}
          . When the last retry fails too, it auto-disables the endpoint. Here that schedule plays sped up, against your
          receiver.
        </p>
        <form class="schedule-form" onSubmit={play}>
          <div class="field">
            <label for={`${id}-type`}>Event type</label>
            <select id={`${id}-type`} value={type} onChange={(event) => setType(event.currentTarget.value)}>
              {eventTypes.map((eventType) => (
                <option key={eventType} value={eventType}>
                  {eventType}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for={`${id}-scale`}>Time scale</label>
            <input
              id={`${id}-scale`}
              type="number"
              min={1}
              step="any"
              required
              aria-describedby={`${id}-scale-help`}
              value={timeScale}
              onInput={(event) => setTimeScale(event.currentTarget.value)}
            />
            <small id={`${id}-scale-help`} class="help">
              3600 makes an hour of the schedule a second
            </small>
          </div>
          <div class="field">
            <label for={`${id}-max`}>Max attempts</label>
            <input
              id={`${id}-max`}
              type="number"
              min={1}
              step={1}
              required
              value={maxAttempts}
              onInput={(event) => setMaxAttempts(event.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for={`${id}-deadline`}>Deadline (seconds)</label>
            <input
              id={`${id}-deadline`}
              type="number"
              min={0}
              step="any"
              required
              value={deadline}
              onInput={(event) => setDeadline(event.currentTarget.value)}
            />
          </div>
          <button type="submit" class="primary" disabled={busy || running || cannotSend !== undefined}>
            Play retry schedule
          </button>
        </form>
        {cannotSend && (
          <div class="endpoint-status is-disabled" data-testid="cannot-send">
            <p class="note warn-note">{cannotSend}</p>
            <EnableEndpoint dashboard={dashboard} />
          </div>
        )}
      </section>
      <section class="card" aria-labelledby={`${id}-runs`}>
        <h2 id={`${id}-runs`}>Runs</h2>
        {runs.length === 0 ? (
          <p class="empty">No run yet: play the retry schedule.</p>
        ) : (
          runs.map((run) => <RunView key={run.id} run={run} onShowAttempt={onShowAttempt} />)
        )}
      </section>
    </>
  );
}
