import type { InboxOutcome, InboxPage, InboxSummary, InboxTimelineEntry } from '@pixhook/core';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import type { InboxEventView, ReplayAnswer } from '../protocol.js';
import { call } from './api.js';
import { Confirm } from './confirm.js';
import { formatMs, prettyBodyCached } from './format.js';
import { formatBytes, formatWhen, fromBase64, hexDump, Untrusted } from './untrusted.js';

const OUTCOMES: InboxOutcome[] = ['processed', 'failed', 'queued', 'dead-letter'];
const PAGE_SIZES = [10, 25, 50, 100];

/** The filters as the form holds them (strings), and as the API takes them. */
interface Filters {
  type: string;
  outcome: string;
  since: string;
  until: string;
  eventId: string;
  deliveryId: string;
  limit: string;
}

const NO_FILTERS: Filters = { type: '', outcome: '', since: '', until: '', eventId: '', deliveryId: '', limit: '50' };

/** The filters as query fields: times from the local date and time inputs to ms since the epoch. */
function queryOf(filters: Filters): Record<string, string> {
  const query: Record<string, string> = {};
  for (const name of ['type', 'outcome', 'eventId', 'deliveryId'] as const) {
    const value = filters[name].trim();
    if (value) query[name] = value;
  }
  for (const name of ['since', 'until'] as const) {
    const time = filters[name] ? new Date(filters[name]).getTime() : Number.NaN;
    if (Number.isFinite(time)) query[name] = String(time);
  }
  return query;
}

function describe(query: Record<string, string>): string {
  const parts = Object.entries(query).map(([name, value]) =>
    name === 'since' || name === 'until' ? `${name} ${formatWhen(Number(value))}` : `${name} ${value}`,
  );
  return parts.length ? parts.join(', ') : 'no filter: every archived event';
}

interface Props {
  eventTypes: string[];
  readOnly: boolean;
  announce(text: string): void;
}

/** The production inbox: archived events, filtered and paged (a cursor per page), one in detail, replay. */
export function Inbox({ eventTypes, readOnly, announce }: Props) {
  const id = useId();
  const [form, setForm] = useState<Filters>(NO_FILTERS);
  const [applied, setApplied] = useState<Filters>(NO_FILTERS);
  /** The cursor of each page seen so far: [undefined (the newest), page 2's, …]. */
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  /** The page shown, and the filters and cursor it was read with. */
  const [shown, setShown] = useState<{ key: string; page: InboxPage }>();
  const [error, setError] = useState<string>();
  const [selected, setSelected] = useState<string>();
  const [confirm, setConfirm] = useState<{ count: number; query: Record<string, string>; note?: string }>();
  const [busy, setBusy] = useState(false);

  const cursor = cursors[cursors.length - 1];
  const key = JSON.stringify([applied, cursor]);
  // Until the page of these filters and this cursor has come, the one before is not shown as it.
  const page = shown?.key === key ? shown.page : undefined;
  const loading = page === undefined && !error;
  const load = async () => {
    const params = new URLSearchParams({ ...queryOf(applied), limit: applied.limit });
    if (cursor !== undefined) params.set('cursor', cursor);
    const answer = await call<InboxPage>(`/api/production/inbox?${params}`);
    if (answer.ok) {
      setShown({ key, page: answer.value });
      setError(undefined);
    } else {
      setError(answer.message);
    }
  };
  useEffect(() => {
    setError(undefined);
    load();
  }, [key]);

  const set = (name: keyof Filters) => (event: Event) =>
    setForm({ ...form, [name]: (event.currentTarget as HTMLInputElement).value });
  const apply = (event: Event) => {
    event.preventDefault();
    setApplied(form);
    setCursors([undefined]);
    setConfirm(undefined);
  };
  const clear = () => {
    setForm(NO_FILTERS);
    setApplied(NO_FILTERS);
    setCursors([undefined]);
    setConfirm(undefined);
  };

  /** Replay every match: the server counts first (a 409 with its count), and replays once confirmed. */
  const replayMatching = async (confirmed?: number) => {
    const query = confirm?.query ?? queryOf(applied);
    setBusy(true);
    const answer = await call<ReplayAnswer>('/api/production/inbox/replay-matching', {
      query,
      ...(confirmed === undefined ? {} : { confirm: confirmed }),
    });
    setBusy(false);
    if (answer.ok) {
      setConfirm(undefined);
      announce(`Replay requested for ${answer.value.requested} events: the app runs them within its poll interval`);
    } else if (answer.status === 409 && answer.count !== undefined) {
      setConfirm({
        count: answer.count,
        query,
        ...(confirmed === undefined ? {} : { note: 'The number of matching events changed meanwhile.' }),
      });
    } else {
      setConfirm(undefined);
      setError(answer.message);
    }
  };

  const items = page?.items ?? [];
  return (
    <section class="card" aria-labelledby={`${id}-heading`} data-testid="inbox">
      <h2 id={`${id}-heading`}>Inbox</h2>
      <p class="note">
        Verified deliveries archived in production, newest first: what arrived (the exact bytes and headers) and what
        became of each event.
      </p>
      <form class="inbox-filters" onSubmit={apply} aria-label="Inbox filters">
        <div class="field">
          <label for={`${id}-type`}>Event type</label>
          <input id={`${id}-type`} list={`${id}-types`} value={form.type} onInput={set('type')} />
          <datalist id={`${id}-types`}>
            {eventTypes.map((type) => (
              <option key={type} value={type} />
            ))}
          </datalist>
        </div>
        <div class="field">
          <label for={`${id}-outcome`}>Outcome</label>
          <select id={`${id}-outcome`} value={form.outcome} onChange={set('outcome')}>
            <option value="">any</option>
            {OUTCOMES.map((outcome) => (
              <option key={outcome} value={outcome}>
                {outcome}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for={`${id}-since`}>Since</label>
          <input id={`${id}-since`} type="datetime-local" step="1" value={form.since} onInput={set('since')} />
        </div>
        <div class="field">
          <label for={`${id}-until`}>Until</label>
          <input id={`${id}-until`} type="datetime-local" step="1" value={form.until} onInput={set('until')} />
        </div>
        <div class="field">
          <label for={`${id}-event`}>Event id</label>
          <input id={`${id}-event`} value={form.eventId} onInput={set('eventId')} />
        </div>
        <div class="field">
          <label for={`${id}-delivery`}>Delivery id</label>
          <input id={`${id}-delivery`} value={form.deliveryId} onInput={set('deliveryId')} />
        </div>
        <div class="field">
          <label for={`${id}-limit`}>Per page</label>
          <select id={`${id}-limit`} value={form.limit} onChange={set('limit')}>
            {PAGE_SIZES.map((size) => (
              <option key={size} value={String(size)}>
                {size}
              </option>
            ))}
          </select>
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            Apply filters
          </button>
          <button type="button" class="quiet" onClick={clear}>
            Clear
          </button>
          <button type="button" class="quiet" onClick={() => load()}>
            Refresh
          </button>
        </div>
      </form>
      {error && (
        <p role="alert" class="error-line" data-testid="inbox-error">
          <Untrusted text={error} />
        </p>
      )}
      <div class="inbox-bar">
        <span data-testid="inbox-page" aria-live="polite">
          {loading ? 'Loading…' : `Page ${cursors.length}: ${items.length} events`}
        </span>
        <button
          type="button"
          onClick={() => setCursors(cursors.slice(0, -1))}
          disabled={cursors.length === 1 || loading}
        >
          Previous page
        </button>
        <button
          type="button"
          onClick={() => page?.next !== undefined && setCursors([...cursors, page.next])}
          disabled={page?.next === undefined || loading}
        >
          Next page
        </button>
        {!readOnly && (
          <button type="button" onClick={() => replayMatching()} disabled={busy}>
            Replay all matching…
          </button>
        )}
      </div>
      {confirm && (
        <Confirm
          question={`${confirm.note ? `${confirm.note} ` : ''}Replay the ${confirm.count} events that match (${describe(confirm.query)})? Their handlers run again, in the app.`}
          action={`Replay ${confirm.count} events`}
          busy={busy}
          onConfirm={() => replayMatching(confirm.count)}
          onCancel={() => setConfirm(undefined)}
        />
      )}
      {items.length === 0 && !loading ? (
        <p class="empty">No archived event matches.</p>
      ) : (
        <table class="inbox-table">
          <thead>
            <tr>
              <th scope="col">Last seen</th>
              <th scope="col">Event type</th>
              <th scope="col">Event id</th>
              <th scope="col">Outcome</th>
              <th scope="col">Deliveries</th>
              <th scope="col">Size</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <Row key={item.eventId} item={item} selected={item.eventId === selected} onSelect={setSelected} />
            ))}
          </tbody>
        </table>
      )}
      {selected !== undefined && (
        <EventDetail
          key={selected}
          eventId={selected}
          readOnly={readOnly}
          announce={announce}
          onClose={() => setSelected(undefined)}
        />
      )}
    </section>
  );
}

function Row({ item, selected, onSelect }: { item: InboxSummary; selected: boolean; onSelect(eventId: string): void }) {
  return (
    <tr data-testid="inbox-row" data-event-id={item.eventId} data-outcome={item.outcome} aria-selected={selected}>
      <td class="nowrap">{formatWhen(item.lastAt)}</td>
      <td class="mono">
        <Untrusted text={item.eventType} />
      </td>
      <td class="mono">
        <button type="button" class="link" onClick={() => onSelect(item.eventId)} aria-label={`Show ${item.eventId}`}>
          <Untrusted text={item.eventId} />
        </button>
      </td>
      <td>
        <span class={`tag outcome-${item.outcome}`}>{item.outcome}</span>
      </td>
      <td>{item.deliveries}</td>
      <td class="nowrap">{formatBytes(item.bytes)}</td>
    </tr>
  );
}

/** One event: its bytes as received, headers, timeline, and Replay. */
function EventDetail({
  eventId,
  readOnly,
  announce,
  onClose,
}: {
  eventId: string;
  readOnly: boolean;
  announce(text: string): void;
  onClose(): void;
}) {
  const id = useId();
  const [event, setEvent] = useState<InboxEventView>();
  const [error, setError] = useState<string>();
  const [view, setView] = useState<'text' | 'formatted' | 'hex'>('text');
  const [n, setN] = useState(0);
  const section = useRef<HTMLElement>(null);

  // Opened below a long list: brought into view.
  useEffect(() => section.current?.scrollIntoView({ block: 'start', behavior: 'smooth' }), []);

  useEffect(() => {
    call<InboxEventView>(`/api/production/inbox/events/${encodeURIComponent(eventId)}`).then((answer) => {
      if (answer.ok) setEvent(answer.value);
      else setError(answer.message);
    });
  }, [eventId, n]);

  const replay = async () => {
    const answer = await call<ReplayAnswer>('/api/production/inbox/replay', { eventIds: [eventId] });
    if (answer.ok) {
      announce(
        answer.value.requested === 1
          ? `Replay of ${eventId} requested: the app runs it within its poll interval`
          : `${eventId} is not in the archive any more: nothing to replay`,
      );
    } else {
      setError(answer.message);
    }
  };

  const bytes = event ? fromBase64(event.body) : undefined;
  return (
    <section
      class="inbox-event"
      ref={section}
      aria-labelledby={`${id}-heading`}
      data-testid="inbox-event"
      data-event-id={eventId}
    >
      <div class="line">
        <h3 id={`${id}-heading`}>
          Event <Untrusted text={eventId} />
        </h3>
        <span class="spacer" />
        {!readOnly && event && (
          <button type="button" class="primary" onClick={replay}>
            Replay
          </button>
        )}
        <button type="button" class="quiet" onClick={() => setN(n + 1)}>
          Reload
        </button>
        <button type="button" class="quiet" onClick={onClose}>
          Close
        </button>
      </div>
      {error && (
        <p role="alert" class="error-line">
          <Untrusted text={error} />
        </p>
      )}
      {event && bytes && (
        <>
          <dl class="facts">
            <dt>Type</dt>
            <dd class="mono">
              <Untrusted text={event.eventType} />
            </dd>
            <dt>Outcome</dt>
            <dd data-testid="event-outcome">{event.outcome}</dd>
            <dt>First delivery</dt>
            <dd>{formatWhen(event.firstAt)}</dd>
            <dt>Last entry</dt>
            <dd>{formatWhen(event.lastAt)}</dd>
            <dt>Deliveries</dt>
            <dd>{event.deliveries}</dd>
            <dt>Mode</dt>
            <dd>{event.mode}</dd>
          </dl>
          <h4>
            Body as received ({bytes.length.toLocaleString('en-US')} bytes
            {event.text === undefined ? ', not UTF-8' : ''})
          </h4>
          {event.text !== undefined && (
            <fieldset class="actions body-views">
              <legend class="sr-only">Show the body</legend>
              {(
                [
                  ['text', 'As received'],
                  ['formatted', 'Formatted JSON'],
                  ['hex', 'Hex'],
                ] as const
              ).map(([key, label]) => (
                <button key={key} type="button" class="quiet" aria-pressed={view === key} onClick={() => setView(key)}>
                  {label}
                </button>
              ))}
            </fieldset>
          )}
          <pre class="body" data-testid="event-body" data-view={event.text === undefined ? 'hex' : view}>
            {event.text === undefined || view === 'hex' ? (
              hexDump(bytes)
            ) : (
              <Untrusted text={view === 'formatted' ? prettyBodyCached(event.text) : event.text} />
            )}
          </pre>
          <h4>Headers as received</h4>
          <pre class="headers" data-testid="event-headers">
            {Object.entries(event.headers).map(([name, value]) => (
              <span key={name}>
                <Untrusted text={name} />: <Untrusted text={value} />
                {'\n'}
              </span>
            ))}
          </pre>
          <h4>Timeline</h4>
          <ol class="event-timeline" data-testid="timeline">
            {event.timeline.map((entry, index) => (
              <TimelineEntry key={index} entry={entry} />
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

function TimelineEntry({ entry }: { entry: InboxTimelineEntry }) {
  return (
    <li data-testid="timeline-entry" data-kind={entry.kind} data-result={entry.result}>
      <p class="line">
        <span class="nowrap">{formatWhen(entry.at)}</span>
        <span class="tag">{entry.kind}</span>
        <span class={`tag outcome-${entry.result}`}>{entry.result}</span>
        {entry.kind === 'delivery' && <span class="mono">{entry.status}</span>}
        {entry.kind === 'delivery' && entry.code && (
          <span class="code">
            <Untrusted text={entry.code} />
          </span>
        )}
        {entry.kind !== 'delivery' && entry.attempt !== undefined && (
          <span>
            attempt {entry.attempt}
            {entry.maxAttempts === undefined ? '' : ` of ${entry.maxAttempts}`}
          </span>
        )}
        <span class="muted">{formatMs(entry.ms)}</span>
      </p>
      <p class="ids mono">
        {entry.kind === 'delivery' && (
          <>
            <span class="label">delivery</span> <Untrusted text={entry.deliveryId} />
          </>
        )}
        {entry.kind !== 'delivery' && entry.jobId !== undefined && (
          <>
            <span class="label">job</span> <Untrusted text={entry.jobId} />
          </>
        )}
      </p>
      {entry.kind !== 'delivery' && entry.error && (
        <p class="explanation" data-testid="timeline-error">
          <Untrusted text={entry.error} />
        </p>
      )}
      {entry.runs.length > 0 && (
        <ul class="runs">
          {entry.runs.map((run, index) => (
            <li key={index} data-testid="handler-run" data-ok={String(run.ok)}>
              <span class="mono">
                <Untrusted text={run.handler} />
              </span>{' '}
              {run.ok ? 'ok' : 'failed'} in {formatMs(run.ms)}
              {run.error && (
                <>
                  : <Untrusted text={run.error} />
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}
