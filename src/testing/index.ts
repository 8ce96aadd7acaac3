/**
 * kafka-lanes/testing: runs the handler `lanes(options, fn)` returns over records in a jest or vitest test, with no
 * Kafka and no Redis. The handler's own engine runs (admission, per-key lanes, retries through the retry tiers,
 * dead letters, the dead-letter policy, steps, outputs, idempotency keys) on the in-memory completion and effects
 * models and a hand-off writer that keeps what it is given; the retry function's invocations are played with a
 * clock that jumps to each copy's due time, so a retry due in ten minutes runs at once.
 *
 * @example
 * import { testLanes } from 'kafka-lanes/testing';
 * import { handler } from '../src/orders';
 *
 * const t = testLanes(handler, { topic: 'orders' });
 * await t.run([{ key: 'c-1', value: { orderId: 'o-1', customerId: 'c-1', amount: 5 } }]);
 * t.runs.map((run) => run.offset); // [0]
 * t.outputs[0]?.value;             // { orderId: 'o-1', paymentId: ... }
 */
import { asOnDemandEnvironment } from './lambda-environment';
import { LanesUnderTest, type TestedHandler as Tested } from './lanes-under-test';
import type { LanesTest, TestLanesOptions } from './types';

// Before the handler's module makes its Logger: Powertools reads it then (`cold_start` at the first invocation).
asOnDemandEnvironment(process.env);

export type { LanesTest, TestDeadLetter, TestError, TestHeldLane, TestLanesOptions, TestOrigin, TestOutput, TestRecord, TestRetry, TestRetryTime, TestRun, TestStep } from './types';
export { CompletionModel, CompletionModelStore } from './completion-model';
export { EffectsModel, OutputLog } from './effects-model';

/** What `testLanes` runs: the handler `lanes()` returns (with any `.use()`d middlewares), or its options and record function. */
export type TestedHandler<V, K> = Tested<V, K>;

/**
 * Puts the handler `lanes(options, fn)` returned under test: its options and its record function run on the real
 * engine, over the in-memory completion and effects models, with no Kafka and no Redis.
 *
 * @example
 * const t = testLanes(handler, { topic: 'orders' });
 * await t.run([{ key: 'c-1', value: order }, { key: 'c-1', value: next }]);
 * expect(t.order('c-1', { topic: 'orders' })).toEqual([0, 1]);
 */
export function testLanes<V, K>(handler: TestedHandler<V, K>, testOptions: TestLanesOptions = {}): LanesTest<V, K> {
  return new LanesUnderTest(handler, testOptions);
}
