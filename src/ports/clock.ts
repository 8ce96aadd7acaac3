/** Epoch milliseconds. Timers stay real: a clock only moves the engine's idea of "now". */
export interface Clock {
  now(): number;
}

export const SYSTEM_CLOCK: Clock = { now: () => Date.now() };
