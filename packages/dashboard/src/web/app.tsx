import { useState } from 'preact/hooks';
import type { Snapshot } from '../protocol.js';
import { DeliveryLog, type Reveal } from './delivery-log.js';
import { Endpoint } from './endpoint.js';
import { Inspector } from './inspector.js';
import { Schedule } from './schedule.js';
import { Tabs } from './tabs.js';
import { TestEvents } from './test-events.js';
import { type Connection, useDashboard } from './use-dashboard.js';

type TabKey = 'deliveries' | 'schedule' | 'inspector';

const CONNECTION: Record<Connection, string> = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'disconnected, reconnecting…',
};

/** Why the page cannot send now: the endpoint is auto-disabled (the API would refuse with a 409). */
function cannotSendReason(snapshot: Snapshot | undefined): string | undefined {
  return snapshot?.endpoint.state === 'auto-disabled'
    ? 'Not sent while the endpoint is auto-disabled: enable it again first (the service delivers nothing to it until then).'
    : undefined;
}

export function App() {
  const dashboard = useDashboard();
  const { snapshot } = dashboard;
  const [tab, setTab] = useState<TabKey>('deliveries');
  const [reveal, setReveal] = useState<Reveal>();
  const cannotSend = cannotSendReason(snapshot);

  const showAttempt = (attemptId: string) => {
    setTab('deliveries');
    setReveal({ attemptId, n: (reveal?.n ?? 0) + 1 });
  };

  return (
    <>
      <header class="top">
        <h1>pixhook dashboard</h1>
        <span class="connection" data-testid="connection" data-state={dashboard.connection}>
          {CONNECTION[dashboard.connection]}
        </span>
        <p class="announcement" role="status" aria-live="polite" data-testid="status">
          {dashboard.announcement}
        </p>
      </header>
      {dashboard.error && (
        <div class="error">
          <p role="alert" data-testid="error">
            {dashboard.error}
          </p>
          <button type="button" class="quiet" onClick={dashboard.dismissError}>
            Dismiss
          </button>
        </div>
      )}
      {snapshot ? (
        <Tabs<TabKey>
          label="Dashboard"
          selected={tab}
          onSelect={setTab}
          tabs={[
            {
              key: 'deliveries',
              label: 'Deliveries',
              panel: (
                <>
                  <Endpoint endpoint={snapshot.endpoint} dashboard={dashboard} />
                  <TestEvents snapshot={snapshot} dashboard={dashboard} cannotSend={cannotSend} />
                  <DeliveryLog
                    attempts={snapshot.attempts}
                    dashboard={dashboard}
                    reveal={reveal}
                    replayUrl={snapshot.endpoint.url}
                    cannotSend={cannotSend}
                  />
                </>
              ),
            },
            {
              key: 'schedule',
              label: 'Retry schedule',
              panel: (
                <Schedule
                  snapshot={snapshot}
                  dashboard={dashboard}
                  onShowAttempt={showAttempt}
                  cannotSend={cannotSend}
                />
              ),
            },
            {
              key: 'inspector',
              label: 'Inspector',
              panel: (
                <Inspector inspectorUrl={snapshot.inspectorUrl} inspected={snapshot.inspected} dashboard={dashboard} />
              ),
            },
          ]}
        />
      ) : (
        <p class="empty">Loading the dashboard's state…</p>
      )}
    </>
  );
}
