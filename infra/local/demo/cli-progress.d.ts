// The few parts of cli-progress the demo uses (the package ships no types).
declare module 'cli-progress' {
  export interface Options {
    format?: string;
    hideCursor?: boolean;
    clearOnComplete?: boolean;
    noTTYOutput?: boolean;
    notTTYSchedule?: number;
  }
  export const Presets: { readonly shades_classic: Record<string, unknown> };
  export class MultiBar {
    constructor(options: Options, preset?: Record<string, unknown>);
    create(total: number, value: number, payload?: Record<string, unknown>): SingleBar;
    stop(): void;
  }
  export class SingleBar {
    setTotal(total: number): void;
    constructor(options: Options, preset?: Record<string, unknown>);
    start(total: number, value: number, payload?: Record<string, unknown>): void;
    update(value: number, payload?: Record<string, unknown>): void;
    stop(): void;
  }
}
