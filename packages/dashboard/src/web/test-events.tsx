import { useId, useState } from 'preact/hooks';
import type { AttemptEntry, SendRequest, Snapshot } from '../protocol.js';
import { attemptResult } from './attempt-text.js';
import { JsonEditor, useJsonObjectText } from './json-editor.js';
import type { Dashboard } from './use-dashboard.js';

interface Props {
  snapshot: Snapshot;
  dashboard: Dashboard;
  /** Why nothing can be sent now (the endpoint is auto-disabled), or undefined. */
  cannotSend: string | undefined;
}

/** One test event per type, sent as the service's test-event button does (no retries). */
export function TestEvents({ snapshot, dashboard, cannotSend }: Props) {
  const id = useId();
  const [staleBy, setStaleBy] = useState(String(snapshot.defaults.staleAgeSeconds));
  const ageSeconds = Number(staleBy) || snapshot.defaults.staleAgeSeconds;
  return (
    <section class="card" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>Test events</h2>
      <div class="field inline">
        <label for={`${id}-stale`}>Stale by (seconds)</label>
        <input
          id={`${id}-stale`}
          type="number"
          min={1}
          step={1}
          value={staleBy}
          onInput={(event) => setStaleBy(event.currentTarget.value)}
        />
      </div>
      {cannotSend && (
        <p class="note warn-note" data-testid="cannot-send">
          {cannotSend}
        </p>
      )}
      <div class="test-events">
        {snapshot.eventTypes.map((type) => (
          <TestEvent
            key={type}
            type={type}
            sample={snapshot.samples[type] ?? {}}
            ageSeconds={ageSeconds}
            dashboard={dashboard}
            blocked={cannotSend !== undefined}
          />
        ))}
      </div>
      <p class="note">
        Test events are sent once each, as the service's test-event button does; play the retry schedule to see retries
        and auto-disable.
      </p>
    </section>
  );
}

interface TestEventProps {
  type: string;
  sample: Record<string, unknown>;
  ageSeconds: number;
  dashboard: Dashboard;
  /** The endpoint is auto-disabled: the send buttons are disabled. */
  blocked: boolean;
}

function sentMessage(type: string, attempts: AttemptEntry[] | undefined): string {
  const results = (attempts ?? []).map(attemptResult);
  return results.length ? `Sent ${type}: ${results.join(', ')}` : `Sent ${type}`;
}

function TestEvent({ type, sample, ageSeconds, dashboard, blocked }: TestEventProps) {
  const sampleText = JSON.stringify(sample, null, 2);
  const object = useJsonObjectText(sampleText, 'data.object');
  const [busy, setBusy] = useState(false);
  const { check } = object;

  const send = async (mode: SendRequest['mode']) => {
    if (check.error !== undefined) return;
    setBusy(true);
    const request: SendRequest = { type, object: check.object, mode };
    if (mode === 'stale') request.ageSeconds = ageSeconds;
    const outcome = await dashboard.act('/api/send', request);
    setBusy(false);
    if (outcome.ok) dashboard.announce(sentMessage(type, outcome.result.attempts));
  };

  const cannotSend = busy || blocked || check.error !== undefined;
  return (
    <article class="test-event" data-testid="test-event" data-type={type} aria-busy={busy}>
      <h3 class="mono">{type}</h3>
      <JsonEditor label={`data.object of ${type}`} value={object} />
      <div class="actions">
        <button type="button" class="primary" disabled={cannotSend} onClick={() => send('once')}>
          Send {type}
        </button>
        <button type="button" disabled={cannotSend} onClick={() => send('twice')}>
          Send {type} twice at once
        </button>
        <button type="button" disabled={cannotSend} onClick={() => send('stale')}>
          Send {type} stale
        </button>
        <button type="button" class="quiet" disabled={busy} onClick={() => object.setText(sampleText)}>
          Reset sample
        </button>
      </div>
    </article>
  );
}
