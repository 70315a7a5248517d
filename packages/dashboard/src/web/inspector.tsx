import { memo } from 'preact/compat';
import { useId, useState } from 'preact/hooks';
import type { DiagnosisView, InspectedDelivery } from '../protocol.js';
import { formatTime } from './format.js';
import { HttpMessage } from './http-message.js';
import type { Dashboard } from './use-dashboard.js';

interface Props {
  inspectorUrl: string;
  inspected: InspectedDelivery[];
  dashboard: Dashboard;
}

/** The dashboard as a receiver: what was sent to it, and why it did not verify. */
export function Inspector({ inspectorUrl, inspected, dashboard }: Props) {
  const id = useId();
  const [busy, setBusy] = useState(false);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(inspectorUrl);
      dashboard.announce('Inspector URL copied');
    } catch {
      // Clipboard access is refused in some contexts; the URL stays selectable.
    }
  };

  const useAsReceiver = async () => {
    setBusy(true);
    const outcome = await dashboard.act('/api/endpoint', { url: inspectorUrl });
    setBusy(false);
    if (outcome.ok) dashboard.announce('The inspector is now the receiver URL');
  };

  return (
    <>
      <section class="card" aria-labelledby={`${id}-heading`}>
        <h2 id={`${id}-heading`}>Inspector</h2>
        <p class="note">
          The dashboard is also a receiver: deliveries sent to <code>{inspectorUrl}</code> are verified with the
          endpoint's secret (as <code>pixhook listen</code> does) and listed here.
        </p>
        <div class="actions">
          <code class="url" data-testid="inspector-url">
            {inspectorUrl}
          </code>
          <button type="button" onClick={copy}>
            Copy
          </button>
          <button type="button" disabled={busy} onClick={useAsReceiver}>
            Use as receiver URL
          </button>
        </div>
      </section>
      <section class="card" aria-labelledby={`${id}-received`}>
        <h2 id={`${id}-received`}>Received</h2>
        {inspected.length === 0 ? (
          <p class="empty">Nothing received yet.</p>
        ) : (
          <ol class="log" reversed>
            {inspected
              .slice()
              .reverse()
              .map((delivery) => (
                <InspectedItem key={delivery.id} delivery={delivery} />
              ))}
          </ol>
        )}
      </section>
    </>
  );
}

/** One inspected delivery; its exchange is laid out only while expanded, and only when it changed. */
const InspectedItem = memo(function InspectedItem({ delivery }: { delivery: InspectedDelivery }) {
  const ok = delivery.verdict !== 'rejected';
  const [open, setOpen] = useState(false);
  return (
    <li
      class={`attempt ${ok ? 'is-ok' : 'is-failed'}`}
      data-testid="inspected"
      data-id={delivery.id}
      data-verdict={delivery.verdict}
      data-code={delivery.code}
    >
      <details onToggle={(event) => setOpen(event.currentTarget.open)}>
        <summary>
          <span class="line">
            <span class="mark" aria-hidden="true">
              {ok ? '✓' : '✗'}
            </span>
            <strong class={`verdict verdict-${delivery.verdict}`}>{delivery.verdict}</strong>
            <span class="status">{delivery.answer.status}</span>
            {delivery.code && <code class="code">{delivery.code}</code>}
            <span class="mono">
              {delivery.method} {delivery.path}
            </span>
            {delivery.event && <span class="mono event-type">{delivery.event.type}</span>}
            <span class="spacer" />
            <time class="mono muted" dateTime={delivery.time}>
              {formatTime(delivery.time)}
            </time>
          </span>
          {delivery.event && (
            <span class="ids mono">
              <span>
                <span class="label">event</span> {delivery.event.id}
              </span>
            </span>
          )}
          {delivery.message && <span class="note-line">{delivery.message}</span>}
        </summary>
        {open && delivery.diagnosis && <Diagnosis diagnosis={delivery.diagnosis} />}
        {open && (
          <div class="exchange">
            <HttpMessage
              title={`Request (${delivery.bodyBytes} bytes)`}
              start={`${delivery.method} ${delivery.path}`}
              headers={delivery.headers}
              body={delivery.body}
            />
            <HttpMessage
              title="Answer"
              start={String(delivery.answer.status)}
              headers={delivery.answer.headers}
              body={delivery.answer.body}
            />
          </div>
        )}
      </details>
    </li>
  );
});

function timestampText(timestamp: NonNullable<DiagnosisView['timestamp']>): string {
  const { ageSeconds, tolerance } = timestamp;
  const age = ageSeconds >= 0 ? `signed ${ageSeconds} s ago` : `signed ${-ageSeconds} s in the future`;
  return `${age}; ${tolerance === false ? 'no tolerance' : `tolerance ${tolerance} s`}`;
}

function Diagnosis({ diagnosis }: { diagnosis: DiagnosisView }) {
  const { step, code, message, timestamp, signatureMatches, causes } = diagnosis;
  const failsAt = step ? `Fails at step ${step}` : 'Fails';
  return (
    <section class="diagnosis" data-testid="diagnosis">
      <h4>
        {failsAt}
        {code && (
          <>
            : <code>{code}</code>
          </>
        )}
      </h4>
      {message && <p>{message}</p>}
      {timestamp && <p data-testid="timestamp-age">{timestampText(timestamp)}</p>}
      {signatureMatches !== undefined && (
        <p data-testid="signature-matches">
          {signatureMatches ? 'The signature matches.' : 'The signature does not match.'}
        </p>
      )}
      {causes.length > 0 && (
        <>
          <h5>Likely causes</h5>
          <ul class="causes">
            {causes.map((cause) => (
              <li key={cause.id} data-testid="cause" data-cause={cause.id}>
                <span class={cause.confirmed ? 'tag ok' : 'tag'}>{cause.confirmed ? '[confirmed]' : '[possible]'}</span>{' '}
                {cause.text}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
