import { formatHeaders, prettyBody } from './format.js';

interface Props {
  title: string;
  /** The first line: `POST <url>` or the answer's status. */
  start: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A request or an answer as text: first line, headers, and the body exactly as it was sent (what
 * the signature covers: white space, key order, a trailing newline), with a formatted copy of JSON
 * one click away.
 */
export function HttpMessage({ title, start, headers, body }: Props) {
  const pretty = prettyBody(body);
  return (
    <section class="http-message">
      <h4>{title}</h4>
      <p class="mono start">{start}</p>
      <pre class="headers">{formatHeaders(headers) || '(no headers)'}</pre>
      {body ? <pre class="body">{body}</pre> : <p class="muted">(empty body)</p>}
      {pretty !== body && (
        <details class="formatted">
          <summary>Formatted JSON</summary>
          <pre class="body">{pretty}</pre>
        </details>
      )}
    </section>
  );
}
