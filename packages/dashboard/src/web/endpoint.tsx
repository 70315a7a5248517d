import { useEffect, useId, useState } from 'preact/hooks';
import type { EndpointView } from '../protocol.js';
import { formatTime } from './format.js';
import type { Dashboard } from './use-dashboard.js';

interface Props {
  endpoint: EndpointView;
  dashboard: Dashboard;
}

/** The receiver's URL and secret, and whether the service would deliver to it. */
export function Endpoint({ endpoint, dashboard }: Props) {
  const id = useId();
  const [url, setUrl] = useState(endpoint.url ?? '');
  const [secret, setSecret] = useState('');
  const [busy, setBusy] = useState(false);
  const disabled = endpoint.state === 'auto-disabled';

  // A URL saved elsewhere (the inspector's "Use as receiver URL") replaces the one shown.
  useEffect(() => setUrl(endpoint.url ?? ''), [endpoint.url]);

  const save = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    const outcome = await dashboard.act('/api/endpoint', secret ? { url, secret } : { url });
    setBusy(false);
    if (!outcome.ok) return;
    setSecret('');
    dashboard.announce(secret ? 'Endpoint and secret saved' : 'Endpoint saved');
  };

  return (
    <section class="card" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>Endpoint</h2>
      <form class="endpoint-form" onSubmit={save} aria-busy={busy}>
        <div class="field grow">
          <label for={`${id}-url`}>Receiver URL</label>
          <input
            id={`${id}-url`}
            type="url"
            required
            placeholder="http://localhost:3000/webhooks"
            autocomplete="off"
            spellcheck={false}
            value={url}
            onInput={(event) => setUrl(event.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for={`${id}-secret`}>Signing secret</label>
          <input
            id={`${id}-secret`}
            type="password"
            autocomplete="off"
            spellcheck={false}
            placeholder={endpoint.secretSet ? 'set — leave empty to keep it' : 'whsec_…'}
            value={secret}
            onInput={(event) => setSecret(event.currentTarget.value)}
          />
        </div>
        <button type="submit" class="primary" disabled={busy}>
          Save endpoint
        </button>
      </form>
      <div class={`endpoint-status${disabled ? ' is-disabled' : ''}`}>
        <p class="badges">
          <span class="badge" data-testid="endpoint-state" data-state={endpoint.state}>
            {endpoint.state}
          </span>
          {disabled && endpoint.disabledAt && (
            <span class="muted" data-testid="disabled-at">
              since <time dateTime={endpoint.disabledAt}>{formatTime(endpoint.disabledAt)}</time>
            </span>
          )}
          <span class="badge neutral" data-testid="secret-state">
            {endpoint.secretSet ? 'Secret set' : 'No secret yet'}
          </span>
        </p>
        <p class="note">
          The service auto-disables an endpoint when the last retry of a delivery fails; it delivers nothing until
          enabled again.
        </p>
        {disabled && <EnableEndpoint dashboard={dashboard} />}
      </div>
    </section>
  );
}

/**
 * The button that enables an auto-disabled endpoint again: under Endpoint, and where a retry
 * schedule's outcome is announced.
 */
export function EnableEndpoint({ dashboard }: { dashboard: Dashboard }) {
  const [busy, setBusy] = useState(false);
  const enable = async () => {
    setBusy(true);
    const outcome = await dashboard.act('/api/endpoint/enable', {});
    setBusy(false);
    if (outcome.ok) dashboard.announce('Endpoint enabled again');
  };
  return (
    <button type="button" onClick={enable} disabled={busy}>
      Enable endpoint again
    </button>
  );
}
