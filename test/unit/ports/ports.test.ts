import { scriptError, ScriptErrorCode } from '../../../src/completion/errors';
import { LanesError } from '../../../src/errors';
import { SYSTEM_CLOCK } from '../../../src/ports/clock';
import { LaneConflictError, NotAdmittedError, NotHeadError, StaleAttemptError, StaleEpochError } from '../../../src/ports/errors';
import { CompletionModelStore } from '../../../src/testing/completion-model';

const REF = { group: 'g', topic: 'orders', partition: 0 };

describe('the completion port', () => {
  it('names its refusals with its own errors, which the Redis store maps its scripts\' codes to', () => {
    expect([
      scriptError(ScriptErrorCode.StaleEpoch, '', 'mark'),
      scriptError(ScriptErrorCode.NotAdmitted, '9', 'mark'),
      scriptError(ScriptErrorCode.LaneConflict, '3', 'block'),
      scriptError(ScriptErrorCode.NotHead, '', 'advance'),
      scriptError(ScriptErrorCode.StaleAttempt, '2', 'advance'),
    ].map((error) => error.constructor)).toEqual([StaleEpochError, NotAdmittedError, LaneConflictError, NotHeadError, StaleAttemptError]);
  });

  it('refuses a move of a head that is not the lane\'s, not retriable, in the in-memory model as in Redis', async () => {
    const store = new CompletionModelStore();
    await store.admit(REF, [{ offset: 0, lane: 'a' }, { offset: 1, lane: 'a' }]);
    await store.block(REF, { head: { lane: 'a', offset: 0, attempt: 1, state: 'retrying' } });
    const next = { attempt: 2, state: 'retrying' as const, dueAtMs: 0, leaseUntilMs: 0 };
    const notHead = await store.advance(REF, 'a', { offset: 1, attempt: 1 }, next).catch((error: unknown) => error);
    const stale = await store.advance(REF, 'a', { offset: 0, attempt: 2 }, next).catch((error: unknown) => error);
    expect(notHead).toBeInstanceOf(NotHeadError);
    expect(stale).toBeInstanceOf(StaleAttemptError);
    expect(notHead).toBeInstanceOf(LanesError);
    expect((notHead as LanesError).retriable).toBe(false);
  });
});

describe('the clock port', () => {
  it('reads the system time by default', () => {
    const before = Date.now();
    const now = SYSTEM_CLOCK.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
