import * as kafkajs from 'kafkajs';
import { loadKafkaJs } from '../../../src/connections';

describe('loadKafkaJs', () => {
  it('returns the kafkajs module, the same object on every call', () => {
    // Act
    const first = loadKafkaJs();

    // Assess
    expect(first.Kafka).toBe(kafkajs.Kafka);
    expect(loadKafkaJs()).toBe(first);
  });

  // The packages only a hand-off, the committer or MSK needs: importing the public entry (as a handler does at
  // cold start) must not evaluate them, nor classic zod (the option schema uses zod/mini).
  const LAZY = ['kafkajs', '@aws-sdk/client-kafka', 'aws-msk-iam-sasl-signer-js', 'zod'] as const;

  it('loads none of them when the public entry is imported, and kafkajs once on the first call', async () => {
    const loads = new Map<string, number>();
    await jest.isolateModulesAsync(async () => {
      // Prepare: count each package's evaluation in a fresh module registry.
      for (const name of LAZY) {
        jest.doMock(name, () => {
          loads.set(name, (loads.get(name) ?? 0) + 1);
          return jest.requireActual(name);
        });
      }

      // Act
      const entry = await import('../../../src');
      const connections = await import('../../../src/connections');
      const atImport = new Map(loads);
      const first = connections.loadKafkaJs();
      const second = connections.loadKafkaJs();

      // Assess
      expect(typeof entry.lanes).toBe('function');
      expect(atImport).toEqual(new Map());
      expect(loads).toEqual(new Map([['kafkajs', 1]]));
      expect(second).toBe(first);
    });
  });
});
