import { awsRecordOfMessage, recordOfMessage } from '../../../src/event/kafkajs-message';

describe('awsRecordOfMessage', () => {
  it('keeps every value of a header kafkajs gathered under one name, and the log-append timestamp type', () => {
    // Act
    const record = awsRecordOfMessage('t', 0, {
      key: null,
      value: Buffer.from('v'),
      timestamp: '5',
      attributes: 0,
      offset: '7',
      size: 0,
      headers: { a: [Buffer.from([1]), Buffer.from([255])], b: 'x' },
      batchContext: { timestampType: 1 },
    } as never);

    // Assess
    expect(record).toEqual({
      topic: 't',
      partition: 0,
      offset: 7,
      timestamp: 5,
      timestampType: 'LOG_APPEND_TIME',
      key: null,
      value: 'dg==',
      headers: [{ a: [1] }, { a: [-1] }, { b: [120] }],
    });
  });
});

describe('recordOfMessage', () => {
  it('decodes the message as a delivered record: bytes, headers in order, coordinates', () => {
    // Act
    const record = recordOfMessage('orders', 2, {
      key: Buffer.from('k'),
      value: Buffer.from('{"a":1}'),
      timestamp: '1700000000000',
      attributes: 0,
      offset: '42',
      size: 0,
      headers: { h: ['one', 'two'] },
    } as never);

    // Assess
    expect(record).toMatchObject({ topic: 'orders', partition: 2, offset: 42, timestamp: 1_700_000_000_000, timestampType: 'CREATE_TIME' });
    expect(record.key?.toString()).toBe('k');
    expect(record.value?.toString()).toBe('{"a":1}');
    expect(record.headers.map((h) => [h.name, Buffer.from(h.value).toString()])).toEqual([['h', 'one'], ['h', 'two']]);
  });
});
