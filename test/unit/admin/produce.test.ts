import { parseProduceRecords } from '../../../src/admin/produce';
import { ConfigError } from '../../../src/errors';

const text = (value: Buffer | null): string | null => (value === null ? null : value.toString('utf8'));

describe('parseProduceRecords', () => {
  it('makes one record per value argument, its JSON written compactly, with the key and headers given', () => {
    // Act
    const records = parseProduceRecords({ values: ['{ "orderId": "o-1", "amount": 30 }', '42'], key: 'c-1', headers: ['trace=abc', 'note=a=b'] });

    // Assess
    expect(records.map((r) => [r.key, text(r.value), r.headers])).toEqual([
      ['c-1', '{"orderId":"o-1","amount":30}', { trace: 'abc', note: 'a=b' }],
      ['c-1', '42', { trace: 'abc', note: 'a=b' }],
    ]);
  });

  it('reads one record per non-empty line, splitting each at the key separator', () => {
    const records = parseProduceRecords({ lines: 'c-1:{"orderId":"o-1"}\n\nc-2:{"orderId":"o-2","note":"a:b"}\r\n', keySeparator: ':' });
    expect(records.map((r) => [r.key, text(r.value)])).toEqual([
      ['c-1', '{"orderId":"o-1"}'],
      ['c-2', '{"orderId":"o-2","note":"a:b"}'],
    ]);
  });

  it('writes raw text as it is', () => {
    const [record] = parseProduceRecords({ values: ['not json {'], format: 'raw' });
    expect([record?.key, text(record?.value ?? null)]).toEqual([null, 'not json {']);
  });

  it('reads record objects with their own key, value, headers and partition', () => {
    const records = parseProduceRecords({
      lines: '{"key":"c-1","value":{"orderId":"o-1"},"headers":{"trace":"t1"},"partition":2}\n{"value":"plain text"}\n{"key":null,"value":null}',
      format: 'records',
      key: 'default-key',
      headers: ['env=test'],
    });
    expect(records.map((r) => [r.key, text(r.value), r.headers, r.partition])).toEqual([
      ['c-1', '{"orderId":"o-1"}', { env: 'test', trace: 't1' }, 2],
      ['default-key', 'plain text', { env: 'test' }, undefined],
      [null, null, { env: 'test' }, undefined],
    ]);
  });

  it.each([
    [{ values: ['{"orderId": o-1}'] }, /Expected JSON in argument 1, got `\{"orderId": o-1\}` .*--raw writes the text as it is/],
    [{ lines: '{"a":1}\nnope', source: 'orders.jsonl' }, /Expected JSON in orders\.jsonl line 2/],
    [{ values: ['1'], headers: ['trace'] }, /Expected `--header <name>=<value>`, got `trace`/],
    [{ lines: 'no separator here', keySeparator: '|' }, /Expected `<key>\|<value>` in input line 1/],
    [{ values: ['{"key":"c-1"}'], format: 'records' as const }, /Expected a record like/],
    [{ values: ['{"key":7,"value":1}'], format: 'records' as const }, /Expected `key` to be a string or null in argument 1, got `7`/],
    [{ values: ['{"value":1,"headers":{"a":1}}'], format: 'records' as const }, /Expected `headers` to be an object of strings/],
    [{ values: [] }, /Expected at least one record/],
  ])('refuses %j, naming where and what was expected', (input, message) => {
    expect(() => parseProduceRecords(input)).toThrow(ConfigError);
    expect(() => parseProduceRecords(input)).toThrow(message);
  });
});
