import { useId, useMemo, useState } from 'preact/hooks';
import { type JsonObjectCheck, parseJsonObject } from './format.js';

export interface JsonObjectText {
  text: string;
  setText(text: string): void;
  check: JsonObjectCheck;
}

/** Text that must be a JSON object, checked as it is typed. `what` names it in the error. */
export function useJsonObjectText(initial: string, what: string): JsonObjectText {
  const [text, setText] = useState(initial);
  const check = useMemo(() => parseJsonObject(text, what), [text, what]);
  return { text, setText, check };
}

interface Props {
  label: string;
  value: JsonObjectText;
  rows?: number;
}

/** A textarea for a JSON object, with its error beside it (not an alert: it changes on each key). */
export function JsonEditor({ label, value, rows = 8 }: Props) {
  const errorId = useId();
  const { error } = value.check;
  return (
    <div class="json-editor">
      <textarea
        aria-label={label}
        aria-invalid={error ? 'true' : 'false'}
        aria-describedby={error ? errorId : undefined}
        rows={rows}
        spellcheck={false}
        autocomplete="off"
        value={value.text}
        onInput={(event) => value.setText(event.currentTarget.value)}
      />
      {error && (
        <p class="json-error" id={errorId} data-testid="json-error">
          {error}
        </p>
      )}
    </div>
  );
}
