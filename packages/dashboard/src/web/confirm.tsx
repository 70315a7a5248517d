import { useEffect, useId, useRef } from 'preact/hooks';

interface Props {
  /** What will happen, e.g. "Replay the 12 events that match these filters?". */
  question: string;
  /** The confirming button's text, e.g. "Replay 12 events". */
  action: string;
  onConfirm(): void;
  onCancel(): void;
  busy?: boolean;
}

/**
 * The confirmation of a set action (replay a filtered set, retry or discard every dead letter):
 * says how many the server counted, and does nothing until confirmed. Focus moves to Cancel, so a
 * stray Enter cancels.
 */
export function Confirm({ question, action, onConfirm, onCancel, busy = false }: Props) {
  const cancel = useRef<HTMLButtonElement>(null);
  const id = useId();
  useEffect(() => cancel.current?.focus(), []);
  return (
    <div class="confirm" role="alertdialog" aria-label="Confirm" aria-describedby={id} data-testid="confirm">
      <p id={id} data-testid="confirm-question">
        {question}
      </p>
      <div class="actions">
        <button type="button" class="danger" onClick={onConfirm} disabled={busy}>
          {action}
        </button>
        <button type="button" class="quiet" ref={cancel} onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
