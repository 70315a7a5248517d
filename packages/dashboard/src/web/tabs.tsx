import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';

export interface Tab<K extends string> {
  key: K;
  label: string;
  panel: ComponentChildren;
}

interface Props<K extends string> {
  label: string;
  tabs: Tab<K>[];
  selected: K;
  onSelect(key: K): void;
}

/**
 * WAI-ARIA tabs with automatic activation: arrows, Home and End move and select. Every panel stays
 * mounted (hidden), so what was typed in one survives a look at another.
 */
export function Tabs<K extends string>({ label, tabs, selected, onSelect }: Props<K>) {
  const list = useRef<HTMLDivElement>(null);

  const move = (event: KeyboardEvent, index: number) => {
    const last = tabs.length - 1;
    const next: Record<string, number> = {
      ArrowRight: index === last ? 0 : index + 1,
      ArrowLeft: index === 0 ? last : index - 1,
      Home: 0,
      End: last,
    };
    const target = next[event.key];
    const tab = target === undefined ? undefined : tabs[target];
    if (!tab) return;
    event.preventDefault();
    onSelect(tab.key);
    list.current?.querySelector<HTMLElement>(`#tab-${tab.key}`)?.focus();
  };

  return (
    <>
      <div class="tablist" role="tablist" aria-label={label} ref={list}>
        {tabs.map((tab, index) => (
          <button
            key={tab.key}
            type="button"
            role="tab"
            id={`tab-${tab.key}`}
            aria-controls={`panel-${tab.key}`}
            aria-selected={tab.key === selected}
            tabIndex={tab.key === selected ? 0 : -1}
            onClick={() => onSelect(tab.key)}
            onKeyDown={(event) => move(event, index)}
          >
            {tab.label}
          </button>
        ))}
      </div>
      {tabs.map((tab) => (
        <div
          key={tab.key}
          role="tabpanel"
          id={`panel-${tab.key}`}
          aria-labelledby={`tab-${tab.key}`}
          class="tabpanel"
          hidden={tab.key !== selected}
        >
          {tab.panel}
        </div>
      ))}
    </>
  );
}
