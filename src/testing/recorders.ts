/** What the test harness records with: metrics dropped, step results noted, bytes shown as text or JSON. */
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { StepsRef } from '../ports/effects';
import { EffectsModel } from './effects-model';

/** Metrics kept in memory and dropped: a test prints no CloudWatch embedded metric lines. */
export class DroppedMetrics extends Metrics {
  override publishStoredMetrics(): this {
    this.clearMetrics();
    return this;
  }

  override singleMetric(): Metrics {
    return new DroppedMetrics({ namespace: 'KafkaLanes', serviceName: 'kafka-lanes' });
  }
}

/** The effects model, noting each step result stored. */
export class NotedEffects extends EffectsModel {
  readonly #stored: (at: StepsRef, name: string, value: string) => void;

  constructor(stored: (at: StepsRef, name: string, value: string) => void) {
    super();
    this.#stored = stored;
  }

  override async saveStep(at: StepsRef, name: string, value: string): Promise<string | undefined> {
    const stored = await super.saveStep(at, name, value);
    if (stored === undefined) this.#stored(at, name, value);
    return stored;
  }
}

export type Mutable<T> = { -readonly [P in keyof T]: T[P] };

export const text = (bytes: Uint8Array | string | null | undefined): string | null =>
  bytes === null || bytes === undefined ? null : typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8');

export const bytesOf = (value: string | Uint8Array | null | undefined): Buffer | null =>
  value === null || value === undefined ? null : typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);

/** JSON when it parses, else the text. */
export function readValue(bytes: Buffer | null): unknown {
  if (bytes === null) return null;
  const body = bytes.toString('utf8');
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

export function valueBytes(value: unknown): Buffer | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array) return Buffer.from(value);
  return Buffer.from(JSON.stringify(value), 'utf8');
}
