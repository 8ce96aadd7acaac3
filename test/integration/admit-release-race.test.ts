import type { Cluster, Redis } from 'ioredis';
import { CompletionStore } from '../../src/completion';
import { redisSetups, uniqueName } from './support/stack';

jest.setTimeout(240_000);

const ROUNDS = 300;

describe.each(redisSetups())('admit racing release on one lane, Redis $name', ({ connect }) => {
  let processorSide: Redis | Cluster;
  let retrySide: Redis | Cluster;
  beforeAll(() => {
    processorSide = connect();
    retrySide = connect();
  });
  afterAll(() => {
    processorSide.disconnect();
    retrySide.disconnect();
  });

  it(`skips no parked record and runs none twice over ${ROUNDS} rounds`, async () => {
    // Prepare: two connections, as the processor and the retry function have.
    const processor = new CompletionStore(processorSide);
    const retry = new CompletionStore(retrySide);
    const ref = { group: uniqueName('race'), topic: uniqueName('race-src'), partition: 0 };
    const lane = Buffer.from('K').toString('base64');
    const outcomes = { parkedThenDrained: 0, ranAfterRelease: 0 };

    for (let round = 0; round < ROUNDS; round += 1) {
      const head = 2 * round;
      const next = head + 1;
      expect((await processor.admit(ref, [{ offset: head, lane }])).statuses).toEqual(['run']);
      await processor.block(ref, { head: { lane, offset: head, attempt: 2, state: 'retrying' } });

      // Act: the processor admits K's next record while the retry function releases K's head.
      const [admitted, released] = await Promise.all([
        processor.admit(ref, [{ offset: next, lane, payload: () => `{"offset":${next}}` }]),
        retry.release(ref, { lane, headOffset: head, nowMs: Date.now(), leaseUntilMs: Date.now() + 60_000 }),
      ]);

      // Assess: exactly one of the two owns the record: parked and handed to the retry function as its lane's
      // new head, or admitted to run on a lane already free. Never both, never neither.
      const status = admitted.statuses[0];
      if (status === 'parked') {
        expect(released).toEqual({ offset: next, payload: `{"offset":${next}}` });
        outcomes.parkedThenDrained += 1;
        // The retry function runs it and releases the lane past it.
        expect(await retry.release(ref, { lane, headOffset: next })).toBeUndefined();
      } else {
        expect(status).toBe('run');
        expect(released).toBeUndefined();
        outcomes.ranAfterRelease += 1;
        await processor.markDone(ref, [next]);
      }
      expect(await retry.laneHead(ref, lane)).toBeUndefined();
    }

    const reading = await processor.frontier(ref);
    expect(reading?.frontier).toBe(2 * ROUNDS);
    expect(outcomes.parkedThenDrained + outcomes.ranAfterRelease).toBe(ROUNDS);
  });
});
