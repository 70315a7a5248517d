import { useEffect, useId } from 'preact/hooks';
import type { AttemptEntry } from '../protocol.js';
import { AttemptItem } from './attempt-item.js';
import type { Dashboard } from './use-dashboard.js';

/** A request to bring one entry into view; `n` changes on each click so the same entry can be shown twice. */
export interface Reveal {
  attemptId: string;
  n: number;
}

interface Props {
  attempts: AttemptEntry[];
  dashboard: Dashboard;
  reveal?: Reveal | undefined;
  /** The endpoint's URL now: where replays go. */
  replayUrl: string | undefined;
  /** Why nothing can be sent now, or undefined. */
  cannotSend: string | undefined;
}

/** Every attempt the dashboard made, newest first. */
export function DeliveryLog({ attempts, dashboard, reveal, replayUrl, cannotSend }: Props) {
  const id = useId();

  useEffect(() => {
    if (!reveal) return;
    const entry = document.getElementById(`attempt-${reveal.attemptId}`);
    const details = entry?.querySelector('details');
    if (!entry || !details) return;
    details.open = true;
    entry.scrollIntoView({ block: 'start', behavior: 'smooth' });
    details.querySelector('summary')?.focus({ preventScroll: true });
  }, [reveal]);

  return (
    <section class="card" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>Delivery log</h2>
      {attempts.length === 0 ? (
        <p class="empty">No deliveries yet: send a test event.</p>
      ) : (
        <ol class="log" reversed>
          {attempts
            .slice()
            .reverse()
            .map((attempt) => (
              <AttemptItem
                key={attempt.id}
                attempt={attempt}
                act={dashboard.act}
                announce={dashboard.announce}
                replayUrl={replayUrl}
                cannotSend={cannotSend}
              />
            ))}
        </ol>
      )}
    </section>
  );
}
