import { copiesFor } from '../../../src/handoff/copies';
import { handOffMessage, readHandOffHeaders } from '../../../src/handoff/headers';
import type { HandOffItem } from '../../../src/ports/handoff';
import { resolveOptions } from '../../../src/options';
import { kafkaRecord } from './factories';

const NOW = 1_718_000_000_000;
const options = resolveOptions({ group: 'grp', retry: { tiers: ['5s', '1m'], backoff: { type: 'fixed', delayMs: 5_000 } } }, {});
const copies = copiesFor(options, () => NOW);
const record = kafkaRecord();
const basis = { record, origin: { topic: 'orders', partition: 3, offset: 41 }, lane: 'QQ==' };
const headersOf = (item: HandOffItem) => readHandOffHeaders(handOffMessage(item).headers ?? {});

describe('copies: the one builder of every hand-off copy', () => {
  it('after a failure: the next attempt, due after the backoff, in the tier of that delay, with its lane', () => {
    const copy = copies.afterFailure(basis, { attempt: 1, firstFailureAtMs: NOW - 10, error: { name: 'Error', message: 'down' } });
    expect(copy).toMatchObject({ kind: 'retry', topic: 'grp.retry.5s', attempt: 2, dueAtMs: NOW + 5_000, firstFailureAtMs: NOW - 10, deferred: false });
    expect(headersOf(copy)).toMatchObject({ lane: 'QQ==', attempt: 2, errorName: 'Error' });
  });

  it("after a failure with the error's own delay: that delay picks the tier", () => {
    expect(copies.afterFailure(basis, { attempt: 1, firstFailureAtMs: NOW, error: { name: 'RetryLaterError', message: 'later' }, delayMs: 60_000 }).topic).toBe('grp.retry.1m');
  });

  it('deferred: attempt unchanged, due now, marked deferred', () => {
    const copy = copies.deferred(basis, 3);
    expect(copy).toMatchObject({ kind: 'retry', topic: 'grp.retry.5s', attempt: 3, dueAtMs: NOW, deferred: true });
    expect(headersOf(copy)).toMatchObject({ deferred: true, lane: 'QQ==' });
  });

  it('written back: to the tier it was read from, its facts unchanged', () => {
    const read = { ...record, topic: 'grp.retry.1m' };
    const copy = copies.writtenBack({ ...basis, record: read }, { attempt: 2, dueAtMs: NOW + 1, firstFailureAtMs: NOW - 5, deferred: true });
    expect(copy).toMatchObject({ topic: 'grp.retry.1m', attempt: 2, dueAtMs: NOW + 1, firstFailureAtMs: NOW - 5, deferred: true });
  });

  it('a dead letter carries the reason, the error and the lane; a record of no lane carries no lane header', () => {
    const copy = copies.deadLetter(basis, 5, 'attempts-exhausted', { name: 'Error', message: 'down' });
    expect(copy).toMatchObject({ kind: 'dead-letter', topic: 'grp.dlq', attempt: 5, reason: 'attempts-exhausted' });
    expect(headersOf(copy).lane).toBe('QQ==');
    expect(handOffMessage(copies.deadLetter({ record, origin: basis.origin }, 1, 'non-retriable', { name: 'E', message: 'm' })).headers).not.toHaveProperty('lanes-lane');
  });
});
