import { memo } from 'preact/compat';
import { useState } from 'preact/hooks';
import type { AttemptEntry, ReplayRequest } from '../protocol.js';
import { attemptResult, originLabel, statusAttribute, statusText } from './attempt-text.js';
import { formatTime, prettyBody } from './format.js';
import { HttpMessage } from './http-message.js';
import { JsonEditor, useJsonObjectText } from './json-editor.js';
import type { Dashboard } from './use-dashboard.js';

interface Props {
  attempt: AttemptEntry;
  /** `dashboard.act` and `dashboard.announce`: stable, so an unchanged entry is not rendered again. */
  act: Dashboard['act'];
  announce: Dashboard['announce'];
  /** Where a replay goes: the endpoint's URL now, which may differ from the one the attempt went to. */
  replayUrl: string | undefined;
  /** Why replays cannot be sent now (the endpoint is auto-disabled), or undefined. */
  cannotSend: string | undefined;
}

const REPLAYED: Record<ReplayRequest['mode'], string> = {
  'as-is': 'Replayed as is',
  're-signed': 'Re-signed and sent',
  edited: 'Edited, re-signed and sent',
};

/**
 * One delivery log entry: its summary, the exchange when expanded (laid out only then), and its
 * replays. Memoised: a log update renders only the entries that changed.
 */
export const AttemptItem = memo(function AttemptItem({ attempt, act, announce, replayUrl, cannotSend }: Props) {
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState(false);
  const [open, setOpen] = useState(false);

  const replay = async (mode: ReplayRequest['mode'], body?: string) => {
    setBusy(true);
    const request: ReplayRequest =
      body === undefined ? { attemptId: attempt.id, mode } : { attemptId: attempt.id, mode, body };
    const outcome = await act('/api/replay', request);
    setBusy(false);
    if (!outcome.ok) return;
    setEditing(false);
    const results = (outcome.result.attempts ?? []).map(attemptResult).join(', ');
    announce(`${REPLAYED[mode]} ${attempt.eventType}${results ? `: ${results}` : ''}`);
  };

  return (
    <li
      id={`attempt-${attempt.id}`}
      class={`attempt ${attempt.ok ? 'is-ok' : 'is-failed'}`}
      data-testid="attempt"
      data-id={attempt.id}
      data-origin={attempt.origin}
      data-status={statusAttribute(attempt)}
      data-code={attempt.code}
      data-duplicate={attempt.duplicate ? 'true' : undefined}
      aria-busy={busy}
    >
      <details onToggle={(event) => setOpen(event.currentTarget.open)}>
        <summary>
          <AttemptSummary attempt={attempt} />
        </summary>
        {open && (
          <div class="exchange">
            <HttpMessage
              title="Request"
              start={`POST ${attempt.request.url}`}
              headers={attempt.request.headers}
              body={attempt.request.body}
            />
            {attempt.answer ? (
              <HttpMessage
                title="Answer"
                start={`${attempt.answer.status} after ${Math.round(attempt.ms)} ms`}
                headers={attempt.answer.headers}
                body={attempt.answer.body}
                truncated={attempt.answer.truncated}
                moreBytes={attempt.answer.moreBytes}
                trimmed={attempt.answer.trimmed}
              />
            ) : (
              <section class="http-message">
                <h4>Answer</h4>
                <p class="mono start">{statusText(attempt)}</p>
              </section>
            )}
          </div>
        )}
      </details>
      <div class="actions entry-actions">
        <button type="button" disabled={busy || cannotSend !== undefined} onClick={() => replay('as-is')}>
          Replay as is
        </button>
        <button type="button" disabled={busy || cannotSend !== undefined} onClick={() => replay('re-signed')}>
          Re-sign and send
        </button>
        <button
          type="button"
          disabled={busy || cannotSend !== undefined}
          aria-expanded={editing}
          onClick={() => setEditing(!editing)}
        >
          Edit and re-sign
        </button>
        <span class="muted replay-target" data-testid="replay-target">
          {cannotSend ??
            (replayUrl === undefined ? 'Replays need a receiver URL' : `Replays go to ${replayUrl}`) +
              (replayUrl !== undefined && replayUrl !== attempt.request.url ? ' (the endpoint’s URL now)' : '')}
        </span>
      </div>
      {editing && cannotSend === undefined && (
        <EditReplay
          body={attempt.request.body}
          busy={busy}
          onSend={(body) => replay('edited', body)}
          onCancel={() => setEditing(false)}
        />
      )}
    </li>
  );
});

function AttemptSummary({ attempt }: { attempt: AttemptEntry }) {
  return (
    <>
      <span class="line">
        <span class="mark" aria-hidden="true">
          {attempt.ok ? '✓' : '✗'}
        </span>
        <span class="sr-only">{attempt.ok ? 'delivered:' : 'failed:'}</span>
        <strong class="status">{statusText(attempt)}</strong>
        {attempt.code && <code class="code">{attempt.code}</code>}
        <span class="mono event-type">{attempt.eventType}</span>
        <span class="tag">{originLabel(attempt)}</span>
        {attempt.replayOf && <span class="muted">of {attempt.replayOf}</span>}
        {attempt.duplicate && <span class="tag warn">duplicate: handlers not run again</span>}
        <span class="spacer" />
        <span class="muted">{Math.round(attempt.ms)} ms</span>
        <time class="mono muted" dateTime={attempt.time}>
          {formatTime(attempt.time)}
        </time>
      </span>
      <span class="ids mono">
        <span>
          <span class="label">event</span> {attempt.eventId}
        </span>
        <span>
          <span class="label">delivery</span> {attempt.deliveryId}
        </span>
        <span>
          <span class="label">log</span> {attempt.id}
        </span>
      </span>
      {attempt.message && (
        <span class="note-line" data-testid="message">
          <span class="label">Receiver said</span> {attempt.message}
        </span>
      )}
      {attempt.explanation && (
        <span class="note-line explanation" data-testid="explanation">
          {attempt.explanation}
        </span>
      )}
      {attempt.hint && (
        <span class="note-line hint" data-testid="hint">
          {attempt.hint}
        </span>
      )}
    </>
  );
}

interface EditProps {
  body: string;
  busy: boolean;
  onSend(body: string): void;
  onCancel(): void;
}

/** The body of an attempt to change and send re-signed: it must stay a JSON object. */
function EditReplay({ body, busy, onSend, onCancel }: EditProps) {
  const text = useJsonObjectText(prettyBody(body), 'The body');
  return (
    <div class="edit-replay">
      <JsonEditor label="Body to re-sign" value={text} rows={10} />
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={busy || text.check.error !== undefined}
          onClick={() => onSend(text.text)}
        >
          Send edited
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
