import type { DeadLetter } from '@pixhook/core';
import { useEffect, useId, useState } from 'preact/hooks';
import type { DeadLetterPage, ProductionInfo, SetActionAnswer } from '../protocol.js';
import { call } from './api.js';
import { Confirm } from './confirm.js';
import { formatWhen, Untrusted } from './untrusted.js';

const PAGE_SIZE = 20;

type Source = ProductionInfo['deadLetters'][number];

interface Props {
  sources: Source[];
  readOnly: boolean;
  announce(text: string): void;
}

/** The dead letters of each queue configured (BullMQ, pg-boss). */
export function DeadLetters({ sources, readOnly, announce }: Props) {
  return (
    <>
      {sources.map((source) => (
        <Queue key={source.id} source={source} readOnly={readOnly} announce={announce} />
      ))}
    </>
  );
}

/** The first line of an error message, for the list. */
function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

function Queue({ source, readOnly, announce }: { source: Source; readOnly: boolean; announce(text: string): void }) {
  const id = useId();
  const base = `/api/production/dead-letters/${encodeURIComponent(source.id)}`;
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<DeadLetterPage>();
  const [error, setError] = useState<string>();
  const [shown, setShown] = useState<string>();
  const [confirm, setConfirm] = useState<{ verb: 'retry' | 'discard'; count: number; note?: string }>();
  const [busy, setBusy] = useState(false);
  const [n, setN] = useState(0);
  const reload = () => setN((value) => value + 1);

  useEffect(() => {
    call<DeadLetterPage>(`${base}?offset=${offset}&limit=${PAGE_SIZE}`).then((answer) => {
      if (answer.ok) {
        setPage(answer.value);
        setError(undefined);
      } else {
        setError(answer.message);
      }
    });
  }, [base, offset, n]);

  const one = async (verb: 'retry' | 'discard', letter: DeadLetter) => {
    setBusy(true);
    const answer = await call<SetActionAnswer>(`${base}/${verb}`, { id: letter.jobId });
    setBusy(false);
    if (answer.ok) {
      announce(
        verb === 'retry'
          ? `Dead letter ${letter.jobId} queued again, with all its attempts`
          : `Dead letter ${letter.jobId} discarded`,
      );
      if (shown === letter.jobId) setShown(undefined);
    } else {
      setError(answer.message);
    }
    reload();
  };

  /** Every dead letter: the server counts first (a 409 with its count), and acts once confirmed. */
  const all = async (verb: 'retry' | 'discard', confirmed?: number) => {
    setBusy(true);
    const answer = await call<SetActionAnswer>(
      `${base}/${verb}-all`,
      confirmed === undefined ? {} : { confirm: confirmed },
    );
    setBusy(false);
    if (answer.ok) {
      setConfirm(undefined);
      announce(
        verb === 'retry'
          ? `${answer.value.count} dead letters queued again`
          : `${answer.value.count} dead letters discarded`,
      );
      setOffset(0);
      reload();
    } else if (answer.status === 409 && answer.count !== undefined) {
      setConfirm({
        verb,
        count: answer.count,
        ...(confirmed === undefined ? {} : { note: 'The number of dead letters changed meanwhile.' }),
      });
    } else {
      setConfirm(undefined);
      setError(answer.message);
    }
  };

  const items = page?.items ?? [];
  const total = page?.total ?? 0;
  return (
    <section
      class="card"
      aria-labelledby={`${id}-heading`}
      data-testid="dead-letter-queue"
      data-engine={source.engine}
      data-queue={source.queueName}
    >
      <h2 id={`${id}-heading`}>
        Dead letters of <Untrusted text={source.queueName} /> <span class="tag">{source.engine}</span>
      </h2>
      <div class="inbox-bar">
        <span data-testid="dead-letter-total" data-total={page ? String(total) : undefined}>
          {page ? `${total} dead letters` : 'Loading…'}
        </span>
        <button type="button" onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))} disabled={offset === 0}>
          Previous page
        </button>
        <button type="button" onClick={() => setOffset(offset + PAGE_SIZE)} disabled={offset + PAGE_SIZE >= total}>
          Next page
        </button>
        <button type="button" class="quiet" onClick={reload}>
          Refresh
        </button>
        {!readOnly && (
          <>
            <button type="button" onClick={() => all('retry')} disabled={busy || total === 0}>
              Retry all…
            </button>
            <button type="button" class="danger" onClick={() => all('discard')} disabled={busy || total === 0}>
              Discard all…
            </button>
          </>
        )}
      </div>
      {error && (
        <p role="alert" class="error-line" data-testid="dead-letter-error">
          <Untrusted text={error} />
        </p>
      )}
      {confirm && (
        <Confirm
          question={`${confirm.note ? `${confirm.note} ` : ''}${
            confirm.verb === 'retry'
              ? `Run all ${confirm.count} dead letters of ${source.queueName} again, each with all its attempts?`
              : `Delete all ${confirm.count} dead letters of ${source.queueName} for good? Their events are never run.`
          }`}
          action={`${confirm.verb === 'retry' ? 'Retry' : 'Discard'} ${confirm.count} dead letters`}
          busy={busy}
          onConfirm={() => all(confirm.verb, confirm.count)}
          onCancel={() => setConfirm(undefined)}
        />
      )}
      {page && items.length === 0 ? (
        <p class="empty">No dead letters{offset > 0 ? ' on this page' : ''}.</p>
      ) : (
        <ol class="dead-letters">
          {items.map((letter) => (
            <li key={letter.jobId} class="dead-letter" data-testid="dead-letter" data-job-id={letter.jobId}>
              <p class="line">
                <span class="nowrap">{letter.failedAt === undefined ? '' : formatWhen(letter.failedAt)}</span>
                <span class="event-type mono">
                  <Untrusted text={letter.delivery?.event.type ?? '(no event)'} />
                </span>
                <span class="mono" data-testid="dead-letter-event">
                  <Untrusted text={letter.delivery?.event.id ?? letter.jobId} />
                </span>
                <span>
                  {letter.attemptsMade} {letter.attemptsMade === 1 ? 'attempt' : 'attempts'}
                </span>
                <span class="spacer" />
                <button
                  type="button"
                  class="quiet"
                  aria-expanded={shown === letter.jobId}
                  onClick={() => setShown(shown === letter.jobId ? undefined : letter.jobId)}
                >
                  {shown === letter.jobId ? 'Hide' : 'Show'}
                </button>
                {!readOnly && (
                  <>
                    <button type="button" onClick={() => one('retry', letter)} disabled={busy}>
                      Retry
                    </button>
                    <button type="button" class="danger" onClick={() => one('discard', letter)} disabled={busy}>
                      Discard
                    </button>
                  </>
                )}
              </p>
              <p class="explanation" data-testid="dead-letter-error-line">
                <Untrusted text={firstLine(letter.error)} />
              </p>
              {shown === letter.jobId && <Detail base={base} jobId={letter.jobId} />}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** One dead letter in full, read again: last error, stack, ids, the queued event. */
function Detail({ base, jobId }: { base: string; jobId: string }) {
  const [letter, setLetter] = useState<DeadLetter>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    call<DeadLetter>(`${base}/${encodeURIComponent(jobId)}`).then((answer) => {
      if (answer.ok) setLetter(answer.value);
      else setError(answer.message);
    });
  }, [base, jobId]);
  if (error)
    return (
      <p role="alert" class="error-line">
        <Untrusted text={error} />
      </p>
    );
  if (!letter) return <p class="muted">Loading…</p>;
  return (
    <div class="dead-letter-detail" data-testid="dead-letter-detail">
      <dl class="facts">
        <dt>Job id</dt>
        <dd class="mono">
          <Untrusted text={letter.jobId} />
        </dd>
        <dt>Delivery id</dt>
        <dd class="mono">
          <Untrusted text={letter.delivery?.deliveryId ?? '(none)'} />
        </dd>
        <dt>Queued</dt>
        <dd>{formatWhen(letter.queuedAt)}</dd>
        <dt>Last failure</dt>
        <dd>{letter.failedAt === undefined ? '(unknown)' : formatWhen(letter.failedAt)}</dd>
        <dt>Attempts</dt>
        <dd>{letter.attemptsMade}</dd>
      </dl>
      <h4>Last error</h4>
      <pre class="body" data-testid="dead-letter-message">
        <Untrusted text={letter.error} />
      </pre>
      <h4>Stack</h4>
      <pre class="body" data-testid="dead-letter-stack">
        {letter.stack === undefined ? '(no stack)' : <Untrusted text={letter.stack} />}
      </pre>
      <h4>Event</h4>
      <pre class="body" data-testid="dead-letter-event-json">
        <Untrusted text={JSON.stringify(letter.delivery?.event ?? null, null, 2)} />
      </pre>
    </div>
  );
}
