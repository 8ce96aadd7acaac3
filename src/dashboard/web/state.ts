/** The queries the page's panels keep: one per table, changed by its sort, filter and pager controls. */

export interface LanesQueryState {
  sort: string;
  dir: 'asc' | 'desc';
  state: '' | 'retrying' | 'held';
  offset: number;
}

export interface DeadLetterQueryState {
  reason: string;
  topic: string;
  lane: string;
  offset: number;
}

export const PAGE_SIZE = 50;
