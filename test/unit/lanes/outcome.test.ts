import fc from 'fast-check';
import { LanesError, NonRetriableError, RetryLaterError } from '../../../src/errors';
import { DeserializationError } from '../../../src/options/errors';
import { decideFailure, describeError, type FailureDecision } from '../../../src/lanes/outcome';
import { kafkaRecord } from '../../support/records';

const deserializationError = (): DeserializationError =>
  new DeserializationError('value', kafkaRecord({ topic: 'orders', partition: 2, offset: 7 }), 'not JSON');

class CustomTypeError extends TypeError {}

/** Errors decideFailure sends to the dead-letter topic on any attempt, with the reason it gives. */
const alwaysDeadLettered: [string, () => unknown, string][] = [
  ['NonRetriableError', () => new NonRetriableError('order has no customerId'), 'non-retriable'],
  ['NonRetriableError with a retriable cause', () => new NonRetriableError('gave up', { cause: new RetryLaterError(5) }), 'non-retriable'],
  ['TypeError', () => new TypeError('x is undefined'), 'programming-error'],
  ['RangeError', () => new RangeError('Invalid array length'), 'programming-error'],
  ['ReferenceError', () => new ReferenceError('y is not defined'), 'programming-error'],
  ['SyntaxError', () => new SyntaxError('Unexpected token'), 'programming-error'],
  ['a subclass of TypeError', () => new CustomTypeError('bad'), 'programming-error'],
  ['a real TypeError from the runtime', () => captured(() => (null as unknown as { x: number }).x), 'programming-error'],
  ['a real SyntaxError from JSON.parse', () => captured(() => JSON.parse('{')), 'programming-error'],
  ['DeserializationError', deserializationError, 'deserialization'],
];

/** Errors that are retried while attempts are left. */
const retriedWhileAttemptsLeft: [string, () => unknown][] = [
  ['a plain Error', () => new Error('connection reset')],
  ['a LanesError marked retriable', () => new LanesError('store busy', { retriable: true })],
  ['an Error subclass that is no programming error', () => new (class TimeoutError extends Error {})('timed out')],
  ['an AggregateError', () => new AggregateError([new Error('a')], 'several')],
  ['a thrown string', () => 'boom'],
  ['a thrown number', () => 42],
  ['undefined', () => undefined],
  ['null', () => null],
  ['a plain object', () => ({ code: 'ECONNRESET' })],
  ['an object with no prototype', () => Object.create(null) as unknown],
];

function captured(act: () => unknown): unknown {
  try {
    act();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('decideFailure', () => {
  describe.each(alwaysDeadLettered)('%s', (_name, makeError, reason) => {
    it.each([
      [1, 5],
      [4, 5],
      [5, 5],
      [1, 1],
      [9, 5],
    ])(`dead-letters it as '${reason}' at attempt %p of %p`, (attempt, maxAttempts) => {
      // Act
      const decision = decideFailure(makeError(), attempt, maxAttempts);

      // Assess
      expect(decision).toEqual({ action: 'dead-letter', reason });
    });
  });

  describe.each(retriedWhileAttemptsLeft)('%s', (_name, makeError) => {
    it.each([
      [1, 2],
      [1, 5],
      [4, 5],
    ])('is retried after attempt %p of %p, with the backoff policy deciding the delay', (attempt, maxAttempts) => {
      // Act
      const decision = decideFailure(makeError(), attempt, maxAttempts);

      // Assess
      expect(decision).toEqual({ action: 'retry', delayMs: undefined });
    });

    it.each([
      [5, 5],
      [1, 1],
      [6, 5],
    ])("is dead-lettered as 'attempts-exhausted' after attempt %p of %p", (attempt, maxAttempts) => {
      // Act
      const decision = decideFailure(makeError(), attempt, maxAttempts);

      // Assess
      expect(decision).toEqual({ action: 'dead-letter', reason: 'attempts-exhausted' });
    });
  });

  describe('RetryLaterError', () => {
    it.each([0, 1, 30_000, 86_400_000])('is retried after %p ms, its own delay', (delayMs) => {
      // Act
      const decision = decideFailure(new RetryLaterError(delayMs), 1, 5);

      // Assess
      expect(decision).toEqual({ action: 'retry', delayMs });
    });

    it("is dead-lettered as 'attempts-exhausted' on the last attempt: its delay does not buy another one", () => {
      // Act
      const decision = decideFailure(new RetryLaterError(30_000), 5, 5);

      // Assess
      expect(decision).toEqual({ action: 'dead-letter', reason: 'attempts-exhausted' });
    });

    it('is retried when it is the doc example', () => {
      // Act
      const decision = decideFailure(new RetryLaterError(30_000), 1, 5);

      // Assess
      expect(decision).toEqual({ action: 'retry', delayMs: 30000 });
    });
  });

  describe('properties', () => {
    const anyThrown: fc.Arbitrary<() => unknown> = fc.oneof(
      fc.constantFrom(...alwaysDeadLettered.map(([, make]) => make), ...retriedWhileAttemptsLeft.map(([, make]) => make)),
      fc.nat({ max: 10_000_000 }).map((delayMs) => () => new RetryLaterError(delayMs)),
      fc.string().map((message) => () => new Error(message)),
      fc.anything().map((value) => () => value),
    );
    const attempts = fc.integer({ min: 1, max: 1_000 });

    it('never retries when attempt >= maxAttempts (G4)', () => {
      fc.assert(
        fc.property(anyThrown, attempts, attempts, (makeError, a, b) => {
          // Prepare
          const maxAttempts = Math.min(a, b);
          const attempt = Math.max(a, b);

          // Act
          const decision = decideFailure(makeError(), attempt, maxAttempts);

          // Assess
          expect(decision.action).toBe('dead-letter');
        }),
        { numRuns: 1000 },
      );
    });

    it('retries only with attempts left, and then only errors that are not dead-lettered on sight', () => {
      fc.assert(
        fc.property(anyThrown, attempts, attempts, (makeError, attempt, maxAttempts) => {
          // Prepare
          const error = makeError();

          // Act
          const decision: FailureDecision = decideFailure(error, attempt, maxAttempts);

          // Assess
          const deadOnSight =
            error instanceof NonRetriableError ||
            error instanceof DeserializationError ||
            error instanceof TypeError ||
            error instanceof RangeError ||
            error instanceof ReferenceError ||
            error instanceof SyntaxError;
          expect(decision.action).toBe(deadOnSight || attempt >= maxAttempts ? 'dead-letter' : 'retry');
          if (decision.action === 'retry') {
            expect(decision.delayMs).toBe(error instanceof RetryLaterError ? error.delayMs : undefined);
          }
        }),
        { numRuns: 1000 },
      );
    });
  });
});

describe('describeError', () => {
  it.each([
    ['an Error', new Error('connection reset'), { name: 'Error', message: 'connection reset' }],
    ['a TypeError', new TypeError('x is undefined'), { name: 'TypeError', message: 'x is undefined' }],
    ['a NonRetriableError (name from its class)', new NonRetriableError('no customerId'), { name: 'NonRetriableError', message: 'no customerId' }],
    ['a RetryLaterError with its default message', new RetryLaterError(250), { name: 'RetryLaterError', message: 'retry in 250 ms' }],
    ['an Error with a custom name', Object.assign(new Error('late'), { name: 'TimeoutError' }), { name: 'TimeoutError', message: 'late' }],
    ['an Error with an empty message', new Error(), { name: 'Error', message: '' }],
  ])('gives the name and message of %s', (_case, error, expected) => {
    // Act
    const described = describeError(error);

    // Assess
    expect(described).toEqual(expected);
  });

  it('names a DeserializationError and keeps its message naming the record', () => {
    // Act
    const described = describeError(deserializationError());

    // Assess
    expect(described).toEqual({ name: 'DeserializationError', message: 'Cannot deserialize the value of record orders-2@7: not JSON' });
  });

  it.each([
    ['a string', 'boom', { name: 'string', message: 'boom' }],
    ['a number', 42, { name: 'number', message: '42' }],
    ['a boolean', false, { name: 'boolean', message: 'false' }],
    ['undefined', undefined, { name: 'undefined', message: 'undefined' }],
    ['null', null, { name: 'null', message: 'null' }],
    ['a bigint', 10n, { name: 'bigint', message: '10' }],
    ['a symbol', Symbol('oops'), { name: 'symbol', message: 'Symbol(oops)' }],
    ['a plain object', { code: 'E1' }, { name: 'object', message: '[object Object]' }],
    ['an object with its own toString', { toString: () => 'custom failure' }, { name: 'object', message: 'custom failure' }],
  ])('gives the type and text of %s, which is no Error', (_case, thrown, expected) => {
    // Act
    const described = describeError(thrown);

    // Assess
    expect(described).toEqual(expected);
  });

  it('describes anything thrown without throwing itself, even an object with no prototype', () => {
    // Prepare: `throw Object.create(null)` is legal JavaScript; String() of it throws a TypeError.
    const thrown = Object.create(null) as unknown;

    // Act
    const act = (): unknown => describeError(thrown);

    // Assess
    expect(act).not.toThrow();
  });

  it('always returns two strings, for any value', () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: false }), (thrown) => {
        // Act
        const described = describeError(thrown);

        // Assess
        expect(typeof described.name).toBe('string');
        expect(typeof described.message).toBe('string');
      }),
      { numRuns: 500 },
    );
  });
});
