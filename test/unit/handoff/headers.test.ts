import fc from 'fast-check';
import type { IHeaders } from 'kafkajs';
import type { KafkaHeader } from '../../../src/event';
import { COPY_HEADROOM_BYTES } from '../../../src/admin/topics';
import {
  HandOffHeader,
  MAX_ERROR_MESSAGE_LENGTH,
  MAX_ERROR_NAME_LENGTH,
  handOffMessage,
  originOf,
  readHandOffHeaders,
  truncateText,
  type HandOffItem,
} from '../../../src/handoff';
import { copyHeaderFormat, LegacyHandOffHeader, MAX_COPY_HEADER_BYTES } from '../../../src/handoff/headers';
import { header, kafkaRecord, retryItem } from './factories';

/** The headers of a message as a consumer receives them: one entry per value, Buffers, in kafkajs' write order. */
function asReceived(headers: IHeaders | undefined): KafkaHeader[] {
  return Object.keys(headers ?? {}).flatMap((name) => {
    const value = headers?.[name];
    const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
    return values.map((one) => ({ name, value: Buffer.isBuffer(one) ? one : Buffer.from(one, 'utf8') }));
  });
}

const frameworkNames = (headers: IHeaders | undefined): string[] =>
  Object.keys(headers ?? {}).filter((name) => name.startsWith('lanes-'));

/** The facts of a message's `lanes-copy` header, as JSON. */
const copyFacts = (headers: IHeaders | undefined): Record<string, unknown> => JSON.parse(String(headers?.[HandOffHeader.Copy])) as Record<string, unknown>;

describe('handOffMessage', () => {
  it('keeps the original key, value and headers and adds the framework facts in one JSON header', () => {
    // Prepare
    const record = kafkaRecord({ headers: [header('trace-id', 'abc'), header('tenant', 'eu-1')] });
    const item = retryItem({ record });

    // Act
    const message = handOffMessage(item);

    // Assess
    expect(message.key).toEqual(Buffer.from('customer-1'));
    expect(message.value).toEqual(Buffer.from('{"id":1}'));
    expect(message.partition).toBeUndefined();
    expect(Object.keys(message.headers ?? {})).toEqual(['trace-id', 'tenant', HandOffHeader.Copy]);
    expect(message.headers?.['trace-id']).toEqual(Buffer.from('abc'));
    // Readable as it is: the kind and the origin first, fields named as `readHandOffHeaders` names them.
    expect(message.headers?.[HandOffHeader.Copy]).toBe(
      '{"kind":"retry","originTopic":"orders","originPartition":3,"originOffset":41,"originTimestamp":1718000000000,' +
        '"attempt":2,"dueAtMs":1718000006000,"firstFailureAtMs":1718000001000,"errorName":"TypeError","errorMessage":"boom"}',
    );
  });

  it('keeps a null key null (no partition either) and a tombstone a tombstone', () => {
    // Act
    const message = handOffMessage(retryItem({ record: kafkaRecord({ key: null, value: null }) }));

    // Assess
    expect(message.key).toBeNull();
    expect(message.value).toBeNull();
    expect(message.partition).toBeUndefined();
  });

  it('keeps binary values and every value of a repeated header, in order', () => {
    // Prepare
    const binary = Buffer.from([0x00, 0xff, 0xc3, 0x28]);
    const record = kafkaRecord({
      key: Buffer.from([0xde, 0xad, 0xbe, 0xef]),
      headers: [header('hop', 'a'), header('bin', binary), header('hop', 'b'), header('hop', 'c'), header('', 'empty')],
    });

    // Act
    const message = handOffMessage(retryItem({ record }));

    // Assess
    expect(message.key).toEqual(Buffer.from([0xde, 0xad, 0xbe, 0xef]));
    expect(message.headers?.hop).toEqual([Buffer.from('a'), Buffer.from('b'), Buffer.from('c')]);
    expect(message.headers?.bin).toEqual(binary);
    expect(message.headers?.['']).toEqual(Buffer.from('empty'));
    // kafkajs writes by name: interleaved names come out grouped, first-appearance order.
    expect(asReceived(message.headers).slice(0, 5).map((h) => h.name)).toEqual(['hop', 'hop', 'hop', 'bin', '']);
  });

  it('treats headers named like Object.prototype members as ordinary names', () => {
    // Prepare
    const record = kafkaRecord({ headers: [header('__proto__', 'x'), header('constructor', 'y'), header('toString', 'z')] });

    // Act
    const message = handOffMessage(retryItem({ record }));

    // Assess
    expect(Object.keys(message.headers ?? {}).slice(0, 3)).toEqual(['__proto__', 'constructor', 'toString']);
    expect(asReceived(message.headers).slice(0, 3).map((h) => h.value.toString())).toEqual(['x', 'y', 'z']);
  });

  it('replaces the framework headers of an earlier copy instead of adding a second set', () => {
    // Prepare: a retry copy that was deferred and carried an error, read back from the retry topic.
    const original = kafkaRecord({ headers: [header('trace-id', 'abc')] });
    const first = handOffMessage(retryItem({ record: original, attempt: 1, deferred: true, reason: 'deadline' }));
    const copy = kafkaRecord({ topic: 'grp.retry.5s', partition: 0, offset: 7, timestamp: 1718000009999, headers: asReceived(first.headers) });

    // Act: it fails again, without an error detail this time, and goes to the next tier.
    const second = handOffMessage({
      record: copy,
      origin: originOf(copy),
      kind: 'retry',
      topic: 'grp.retry.1m',
      attempt: 3,
      dueAtMs: 1718000070000,
      firstFailureAtMs: 1718000001000,
    });

    // Assess
    const received = asReceived(second.headers);
    const names = received.map((h) => h.name);
    expect(new Set(names).size).toBe(names.length);
    expect(frameworkNames(second.headers)).toEqual([HandOffHeader.Copy]);
    expect(readHandOffHeaders(received)).toEqual({
      originTopic: 'orders',
      originPartition: 3,
      originOffset: 41,
      originTimestamp: 1718000000000,
      kind: 'retry',
      attempt: 3,
      dueAtMs: 1718000070000,
      firstFailureAtMs: 1718000001000,
      errorName: undefined,
      errorMessage: undefined,
      reason: undefined,
      deferred: undefined,
    });
    expect(received[0]).toEqual(header('trace-id', 'abc'));
  });

  it('drops any lanes-* header of the record, even one this version does not know', () => {
    // Act
    const message = handOffMessage(retryItem({ record: kafkaRecord({ headers: [header('lanes-future', '1'), header('lanesx', '2')] }) }));

    // Assess
    expect(message.headers?.['lanes-future']).toBeUndefined();
    expect(message.headers?.lanesx).toEqual(Buffer.from('2'));
  });

  it('writes a dead letter with its reason', () => {
    // Act
    const message = handOffMessage(
      retryItem({ kind: 'dead-letter', topic: 'grp.dlq', attempt: 5, reason: 'attempts exhausted (5 of 5)' }),
    );

    // Assess
    expect(copyFacts(message.headers)).toMatchObject({ kind: 'dead-letter', reason: 'attempts exhausted (5 of 5)' });
  });

  it('flags a deferred record and leaves the flag out otherwise', () => {
    expect(copyFacts(handOffMessage(retryItem({ deferred: true, error: undefined })).headers).deferred).toBe(true);
    expect(copyFacts(handOffMessage(retryItem({ deferred: false })).headers)).not.toHaveProperty('deferred');
    expect(copyFacts(handOffMessage(retryItem()).headers)).not.toHaveProperty('deferred');
  });

  it('truncates a long error message and error class, saying so', () => {
    // Prepare
    const message = 'x'.repeat(5000);

    // Act
    const facts = copyFacts(handOffMessage(retryItem({ error: { name: 'E'.repeat(300), message } })).headers);

    // Assess
    const written = String(facts.errorMessage);
    expect(written).toHaveLength(MAX_ERROR_MESSAGE_LENGTH);
    expect(written.endsWith('… [truncated from 5000 chars]')).toBe(true);
    expect(written.startsWith('xxxx')).toBe(true);
    expect(String(facts.errorName)).toHaveLength(MAX_ERROR_NAME_LENGTH);
  });

  it('keeps the header within its byte bound when JSON escapes the error text to six bytes a character', () => {
    // Prepare: control characters and lone surrogates are written as \uXXXX.
    const item = retryItem({ kind: 'dead-letter', error: { name: '\u0001'.repeat(300), message: '\u0002\ud800'.repeat(3000) }, reason: '\u0003'.repeat(5000) });

    // Act
    const value = String(handOffMessage(item).headers?.[HandOffHeader.Copy]);

    // Assess
    expect(Buffer.byteLength(value, 'utf8')).toBeLessThanOrEqual(MAX_COPY_HEADER_BYTES);
    const read = readHandOffHeaders({ [HandOffHeader.Copy]: value });
    const kept = String(read.errorMessage).replace(/… \[truncated from \d+ chars\]$/, '');
    expect(kept.length).toBeLessThan(String(read.errorMessage).length);
    expect('\u0002\ud800'.repeat(3000).startsWith(kept)).toBe(true);
    expect(read.reason).toMatch(/… \[truncated from \d+ chars\]$/);
  });

  it('sizes the retry and dead-letter topics for the longest header', () => {
    expect(MAX_COPY_HEADER_BYTES + HandOffHeader.Copy.length + 1_024).toBeLessThanOrEqual(COPY_HEADROOM_BYTES);
  });

  it('leaves out the origin timestamp when the record has none (-1)', () => {
    expect(copyFacts(handOffMessage(retryItem({ record: kafkaRecord({ timestamp: -1 }) })).headers)).not.toHaveProperty('originTimestamp');
  });

  it.each<[string, Partial<HandOffItem>, RegExp]>([
    ['an empty topic', { topic: '' }, /^Expected `topic` to be a non-empty string, got `` \(string\)$/],
    ['an unknown kind', { kind: 'parked' as HandOffItem['kind'] }, /^Expected `kind` to be `retry` or `dead-letter`/],
    ['a negative attempt', { attempt: -1 }, /^Expected `attempt` to be a non-negative integer, got `-1` \(number\)$/],
    ['a fractional due time', { dueAtMs: 1.5 }, /^Expected `dueAtMs` to be a non-negative integer \(epoch ms\)/],
    ['a NaN first failure', { firstFailureAtMs: Number.NaN }, /^Expected `firstFailureAtMs`/],
    ['an origin without topic', { origin: { topic: '', partition: 0, offset: 0 } }, /^Expected `origin.topic`/],
    ['a negative origin offset', { origin: { topic: 't', partition: 0, offset: -1 } }, /^Expected `origin.offset`/],
    ['an unsafe origin partition', { origin: { topic: 't', partition: 2 ** 53, offset: 0 } }, /^Expected `origin.partition`/],
  ])('refuses %s with a RangeError', (_, overrides, message) => {
    expect(() => handOffMessage(retryItem(overrides))).toThrow(RangeError);
    expect(() => handOffMessage(retryItem(overrides))).toThrow(message);
  });
});

describe('readHandOffHeaders', () => {
  it('reads back what handOffMessage wrote, from a header list and from a kafkajs headers object', () => {
    // Prepare
    const item = retryItem({
      kind: 'dead-letter',
      attempt: 4,
      reason: 'non-retriable',
      deferred: true,
      error: { name: 'NonRetriableError', message: 'bad order ✓ ünïcödé' },
    });

    // Act
    const message = handOffMessage(item);

    // Assess
    const expected = {
      originTopic: 'orders',
      originPartition: 3,
      originOffset: 41,
      originTimestamp: 1718000000000,
      kind: 'dead-letter',
      attempt: 4,
      dueAtMs: 1718000006000,
      firstFailureAtMs: 1718000001000,
      errorName: 'NonRetriableError',
      errorMessage: 'bad order ✓ ünïcödé',
      reason: 'non-retriable',
      deferred: true,
    };
    expect(readHandOffHeaders(asReceived(message.headers))).toEqual(expected);
    expect(readHandOffHeaders(message.headers ?? {})).toEqual(expected);
  });

  it('gives every field undefined for a record without framework headers', () => {
    expect(Object.values(readHandOffHeaders([header('trace-id', 'abc')])).every((value) => value === undefined)).toBe(true);
    expect(Object.values(readHandOffHeaders({})).every((value) => value === undefined)).toBe(true);
  });

  it.each<[string, string | Buffer]>([
    ['not UTF-8', Buffer.from([0xc3, 0x28])],
    ['not JSON', '{"attempt":2'],
    ['a JSON array', '[2]'],
    ['a JSON string', '"attempt"'],
    ['null', 'null'],
  ])('gives every field undefined for a lanes-copy header that is %s', (_, value) => {
    expect(Object.values(readHandOffHeaders([header(HandOffHeader.Copy, value)])).every((fact) => fact === undefined)).toBe(true);
  });

  it('gives undefined for a fact of the wrong type, a negative or unsafe number, an unknown kind, an empty origin topic', () => {
    // Act
    const read = readHandOffHeaders([
      header(
        HandOffHeader.Copy,
        JSON.stringify({ kind: 'parked', originTopic: '', originPartition: '3', originOffset: -1, attempt: 1.5, dueAtMs: 2 ** 53, deferred: 'yes', errorMessage: 7 }),
      ),
    ]);

    // Assess
    expect(read).toMatchObject({
      kind: undefined, originTopic: undefined, originPartition: undefined, originOffset: undefined, attempt: undefined,
      dueAtMs: undefined, deferred: undefined, errorMessage: undefined,
    });
  });

  it('counts a repeated lanes-copy header by its last value, as Kafka lastHeader does', () => {
    expect(readHandOffHeaders([header(HandOffHeader.Copy, '{"attempt":2}'), header(HandOffHeader.Copy, '{"attempt":3}')]).attempt).toBe(3);
    expect(readHandOffHeaders({ [HandOffHeader.Copy]: ['{"attempt":2}', Buffer.from('{"attempt":3}')] }).attempt).toBe(3);
  });

  it('reads a deferred flag written as false', () => {
    expect(readHandOffHeaders([header(HandOffHeader.Copy, '{"deferred":false}')]).deferred).toBe(false);
  });

  it('reads the facts from lanes-copy alone when a record also carries headers of the previous release', () => {
    // Act
    const read = readHandOffHeaders([header(LegacyHandOffHeader.Attempt, '7'), header(HandOffHeader.Copy, '{"attempt":2}'), header(LegacyHandOffHeader.Kind, 'retry')]);

    // Assess
    expect(read).toMatchObject({ attempt: 2, kind: undefined });
  });

  it('names how a record carries the facts', () => {
    expect(copyHeaderFormat(handOffMessage(retryItem()).headers ?? {})).toBe('copy');
    expect(copyHeaderFormat([header(LegacyHandOffHeader.Attempt, 'two')])).toBe('legacy');
    expect(copyHeaderFormat([header('trace-id', 'abc'), header(HandOffHeader.FirstOrigin, 'orders/3/41')])).toBeUndefined();
  });

  it('round-trips any item (property)', () => {
    const safe = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
    fc.assert(
      fc.property(
        fc.record({
          topic: fc.string({ minLength: 1 }),
          partition: safe,
          offset: safe,
          attempt: safe,
          dueAtMs: safe,
          firstFailureAtMs: safe,
          kind: fc.constantFrom<HandOffItem['kind']>('retry', 'dead-letter'),
          error: fc.option(fc.record({ name: fc.string({ maxLength: 200 }), message: fc.string({ maxLength: 1000 }) }), { nil: undefined }),
          reason: fc.option(fc.string({ maxLength: 1000 }), { nil: undefined }),
          deferred: fc.option(fc.boolean(), { nil: undefined }),
        }),
        (f) => {
          const item = retryItem({
            origin: { topic: f.topic, partition: f.partition, offset: f.offset },
            kind: f.kind,
            attempt: f.attempt,
            dueAtMs: f.dueAtMs,
            firstFailureAtMs: f.firstFailureAtMs,
            error: f.error,
            reason: f.reason,
            deferred: f.deferred,
          });
          const read = readHandOffHeaders(asReceived(handOffMessage(item).headers));
          // Strings round-trip exactly: JSON writes a lone surrogate as an escape, which UTF-8 would not keep.
          expect(read).toEqual({
            originTopic: f.topic,
            originPartition: f.partition,
            originOffset: f.offset,
            originTimestamp: 1718000000000,
            kind: f.kind,
            attempt: f.attempt,
            dueAtMs: f.dueAtMs,
            firstFailureAtMs: f.firstFailureAtMs,
            errorName: f.error?.name,
            errorMessage: f.error?.message,
            reason: f.reason,
            deferred: f.deferred === true ? true : undefined,
          });
        },
      ),
    );
  });
});

describe('readHandOffHeaders, a copy of the previous release (one header per fact)', () => {
  /** The headers the previous release wrote on a dead letter, as a consumer receives them. */
  const previousRelease = [
    header('trace-id', 'abc'),
    header(LegacyHandOffHeader.OriginTopic, 'orders'),
    header(LegacyHandOffHeader.OriginPartition, '3'),
    header(LegacyHandOffHeader.OriginOffset, '41'),
    header(LegacyHandOffHeader.OriginTimestamp, '1718000000000'),
    header(LegacyHandOffHeader.Lane, 'Y3VzdG9tZXItMQ=='),
    header(LegacyHandOffHeader.Kind, 'dead-letter'),
    header(LegacyHandOffHeader.Attempt, '4'),
    header(LegacyHandOffHeader.DueAt, '1718000006000'),
    header(LegacyHandOffHeader.FirstFailureAt, '1718000001000'),
    header(LegacyHandOffHeader.ErrorClass, 'NonRetriableError'),
    header(LegacyHandOffHeader.ErrorMessage, 'bad order ✓'),
    header(LegacyHandOffHeader.DeadLetterReason, 'non-retriable'),
    header(LegacyHandOffHeader.Deferred, 'true'),
    header(LegacyHandOffHeader.LeftOut, 'value'),
    header(LegacyHandOffHeader.OriginalValueSize, '1048400'),
  ];

  it('reads every fact as the previous release wrote it', () => {
    expect(readHandOffHeaders(previousRelease)).toEqual({
      originTopic: 'orders',
      originPartition: 3,
      originOffset: 41,
      originTimestamp: 1718000000000,
      lane: 'Y3VzdG9tZXItMQ==',
      kind: 'dead-letter',
      attempt: 4,
      dueAtMs: 1718000006000,
      firstFailureAtMs: 1718000001000,
      errorName: 'NonRetriableError',
      errorMessage: 'bad order ✓',
      reason: 'non-retriable',
      deferred: true,
      leftOut: 'value',
      originalValueSize: 1048400,
    });
  });

  it('writes a copy of it in the one-header form, the first origin timestamp kept', () => {
    // Prepare
    const copy = kafkaRecord({ topic: 'grp.retry.5s', partition: 0, offset: 7, timestamp: 1718000009999, headers: previousRelease });

    // Act
    const message = handOffMessage({ record: copy, origin: originOf(copy), kind: 'retry', topic: 'grp.retry.1m', attempt: 5, dueAtMs: 1, firstFailureAtMs: 1 });

    // Assess
    expect(frameworkNames(message.headers)).toEqual([HandOffHeader.Copy]);
    expect(copyFacts(message.headers)).toMatchObject({ originTopic: 'orders', originPartition: 3, originOffset: 41, originTimestamp: 1718000000000, attempt: 5 });
  });

  it.each<[string, string | Buffer]>([
    ['not UTF-8', Buffer.from([0xc3, 0x28])],
    ['not a number', '12a'],
    ['negative', '-1'],
    ['exponent notation', '1e3'],
    ['a leading zero', '007'],
    ['padded', ' 7'],
    ['beyond 2^53', '9007199254740993'],
    ['empty', ''],
  ])('gives undefined for a number header that is %s', (_, value) => {
    // Act
    const read = readHandOffHeaders([
      header(LegacyHandOffHeader.Attempt, value),
      header(LegacyHandOffHeader.OriginOffset, value),
      header(LegacyHandOffHeader.DueAt, value),
    ]);

    // Assess
    expect(read.attempt).toBeUndefined();
    expect(read.originOffset).toBeUndefined();
    expect(read.dueAtMs).toBeUndefined();
  });

  it('gives undefined for an unknown kind, an unknown deferred flag, an empty origin topic and non-UTF-8 text', () => {
    // Act
    const read = readHandOffHeaders([
      header(LegacyHandOffHeader.Kind, 'parked'),
      header(LegacyHandOffHeader.Deferred, 'yes'),
      header(LegacyHandOffHeader.OriginTopic, ''),
      header(LegacyHandOffHeader.ErrorMessage, Buffer.from([0xff])),
    ]);

    // Assess
    expect(read).toMatchObject({ kind: undefined, deferred: undefined, originTopic: undefined, errorMessage: undefined });
  });

  it('counts a repeated header by its last value, as Kafka lastHeader does', () => {
    expect(readHandOffHeaders([header(LegacyHandOffHeader.Attempt, '2'), header(LegacyHandOffHeader.Attempt, '3')]).attempt).toBe(3);
    expect(readHandOffHeaders({ [LegacyHandOffHeader.Attempt]: ['2', Buffer.from('3')] }).attempt).toBe(3);
  });

  it('reads a deferred flag written as false', () => {
    expect(readHandOffHeaders([header(LegacyHandOffHeader.Deferred, 'false')]).deferred).toBe(false);
  });
});

describe('originOf', () => {
  it("is the record's own coordinates for an original record", () => {
    expect(originOf(kafkaRecord())).toEqual({ topic: 'orders', partition: 3, offset: 41 });
  });

  it('is the origin its headers carry for a copy read from a retry topic', () => {
    // Prepare
    const copy = kafkaRecord({
      topic: 'grp.retry.5s',
      partition: 0,
      offset: 7,
      headers: asReceived(handOffMessage(retryItem()).headers),
    });

    // Act / Assess
    expect(originOf(copy)).toEqual({ topic: 'orders', partition: 3, offset: 41 });
  });

  it('falls back to the own coordinates, all three, when an origin header is garbled', () => {
    // Prepare
    const copy = kafkaRecord({
      topic: 'grp.retry.5s',
      partition: 0,
      offset: 7,
      headers: [header(LegacyHandOffHeader.OriginTopic, 'orders'), header(LegacyHandOffHeader.OriginPartition, '3'), header(LegacyHandOffHeader.OriginOffset, 'x')],
    });

    // Act / Assess
    expect(originOf(copy)).toEqual({ topic: 'grp.retry.5s', partition: 0, offset: 7 });
  });
});

describe('truncateText', () => {
  it('leaves text at the limit alone', () => {
    expect(truncateText('x'.repeat(1000), 1000)).toBe('x'.repeat(1000));
  });

  it('cuts text over the limit to exactly the limit, marker included', () => {
    const cut = truncateText('x'.repeat(1001), 1000);
    expect(cut).toHaveLength(1000);
    expect(cut).toMatch(/x… \[truncated from 1001 chars\]$/);
  });

  it('never splits a surrogate pair', () => {
    // Prepare: put an emoji (two UTF-16 units) across the cut point.
    const marker = '… [truncated from 2000 chars]';
    const cutAt = 1000 - marker.length;
    const text = 'x'.repeat(cutAt - 1) + '😀' + 'y'.repeat(2000 - cutAt - 1);

    // Act
    const cut = truncateText(text, 1000);

    // Assess
    expect(cut).toBe('x'.repeat(cutAt - 1) + marker);
    expect(cut.length).toBeLessThanOrEqual(1000);
  });
});
