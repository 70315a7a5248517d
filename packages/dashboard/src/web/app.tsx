import { useEffect, useState } from 'preact/hooks';
import type { ProductionInfo, Snapshot } from '../protocol.js';
import { call } from './api.js';
import { DeadLetters } from './dead-letters.js';
import { DeliveryLog, type Reveal } from './delivery-log.js';
import { Endpoint } from './endpoint.js';
import { Inbox } from './inbox.js';
import { Inspector } from './inspector.js';
import { Schedule } from './schedule.js';
import { Tabs } from './tabs.js';
import { TestEvents } from './test-events.js';
import { type Connection, useDashboard } from './use-dashboard.js';

type TabKey = 'deliveries' | 'schedule' | 'inspector' | 'inbox' | 'dead-letters';

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
  const [production, setProduction] = useState<ProductionInfo>();
  useEffect(() => {
    call<ProductionInfo>('/api/production').then((answer) => {
      if (answer.ok) setProduction(answer.value);
    });
  }, []);
  const readOnly = production?.readOnly ?? true;

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
        {production?.readOnly && (
          <span class="tag warn" data-testid="read-only" title="Started read-only: replay, retry and discard are off">
            read-only
          </span>
        )}
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
            ...(production?.inbox
              ? [
                  {
                    key: 'inbox' as const,
                    label: 'Inbox',
                    panel: <Inbox eventTypes={snapshot.eventTypes} readOnly={readOnly} announce={dashboard.announce} />,
                  },
                ]
              : []),
            ...(production && production.deadLetters.length > 0
              ? [
                  {
                    key: 'dead-letters' as const,
                    label: 'Dead letters',
                    panel: (
                      <DeadLetters sources={production.deadLetters} readOnly={readOnly} announce={dashboard.announce} />
                    ),
                  },
                ]
              : []),
          ]}
        />
      ) : (
        <p class="empty">Loading the dashboard's state…</p>
      )}
    </>
  );
}
