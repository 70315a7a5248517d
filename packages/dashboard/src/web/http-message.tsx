import { useState } from 'preact/hooks';
import { formatHeaders, looksLikeJson, prettyBodyCached } from './format.js';

/**
 * Characters of a body laid out at first: a 5 MB answer laid out whole froze the tab for seconds.
 * The rest is one click away ("Show all").
 */
export const SHOWN_CHARS = 16_384;

interface Props {
  title: string;
  /** The first line: `POST <url>` or the answer's status. */
  start: string;
  headers: Record<string, string>;
  body: string;
  /** The answer was longer than the CLI reads (1 MiB): `body` is its prefix. */
  truncated?: boolean | undefined;
  /** With `truncated`, the bytes not read, when the answer's Content-Length said. */
  moreBytes?: number | undefined;
  /** An older answer cut to its first 16,384 characters to keep the log within 32 MiB of answers. */
  trimmed?: boolean | undefined;
}

/**
 * A request or an answer as text: first line, headers (wrapped), and the body exactly as it was
 * sent (what the signature covers: white space, key order, a trailing newline, which is marked),
 * with a formatted copy of JSON one click away. Long bodies show their first `SHOWN_CHARS`
 * characters until asked for all; the formatted copy is made only when opened, and once per body.
 */
export function HttpMessage({ title, start, headers, body, truncated, moreBytes, trimmed }: Props) {
  return (
    <section class="http-message">
      <h4>{title}</h4>
      <p class="mono start">{start}</p>
      <pre class="headers" data-testid="headers">
        {formatHeaders(headers) || '(no headers)'}
      </pre>
      {body ? <BoundedText text={body} markEnd /> : <p class="muted">(empty body)</p>}
      {truncated && (
        <p class="cut" data-testid="not-read">
          … {moreBytes === undefined ? 'more bytes' : `${moreBytes.toLocaleString('en-US')} bytes more`}, not read: the
          dashboard reads the first 1 MiB of an answer (the service does not use its body)
        </p>
      )}
      {trimmed && (
        <p class="cut" data-testid="trimmed">
          … cut to its first {body.length.toLocaleString('en-US')} characters: the log keeps 32 MiB of answers in all,
          and this one is older
        </p>
      )}
      {!truncated && !trimmed && looksLikeJson(body) && <FormattedJson body={body} />}
    </section>
  );
}

/** The formatted copy, made when first opened (and cached for the body). */
function FormattedJson({ body }: { body: string }) {
  const [open, setOpen] = useState(false);
  const pretty = open ? prettyBodyCached(body) : undefined;
  return (
    <details class="formatted" onToggle={(event) => setOpen(event.currentTarget.open)}>
      <summary>Formatted JSON</summary>
      {pretty !== undefined &&
        (pretty === body ? (
          <p class="muted">(the body above is not JSON, or is formatted already)</p>
        ) : (
          <BoundedText text={pretty} />
        ))}
    </details>
  );
}

/** A long text's first `SHOWN_CHARS` characters, with a button for the rest. */
function BoundedText({ text, markEnd = false }: { text: string; markEnd?: boolean }) {
  const [whole, setWhole] = useState(false);
  const shown = whole ? text : prefix(text, SHOWN_CHARS);
  const hidden = text.length - shown.length;
  return (
    <>
      <pre class="body" data-testid="body">
        {shown}
        {markEnd && hidden === 0 && text.endsWith('\n') && (
          <span class="eol-mark" data-testid="trailing-newline" title="The body ends with a line break">
            ⏎ ends with a line break
          </span>
        )}
      </pre>
      {hidden > 0 && (
        <p class="cut">
          <span data-testid="hidden-chars">… {hidden.toLocaleString('en-US')} characters more</span>{' '}
          <button type="button" class="quiet" onClick={() => setWhole(true)}>
            Show all
          </button>
        </p>
      )}
    </>
  );
}

/** The first `length` UTF-16 units of `text`, without splitting a surrogate pair. */
function prefix(text: string, length: number): string {
  if (text.length <= length) return text;
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}
