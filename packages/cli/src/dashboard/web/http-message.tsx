import { formatHeaders, prettyBody } from './format.js';

interface Props {
  title: string;
  /** The first line: `POST <url>` or the answer's status. */
  start: string;
  headers: Record<string, string>;
  body: string;
}

/** A request or an answer as text: first line, headers, body (pretty when JSON). */
export function HttpMessage({ title, start, headers, body }: Props) {
  return (
    <section class="http-message">
      <h4>{title}</h4>
      <p class="mono start">{start}</p>
      <pre class="headers">{formatHeaders(headers) || '(no headers)'}</pre>
      {body ? <pre class="body">{prettyBody(body)}</pre> : <p class="muted">(empty body)</p>}
    </section>
  );
}
