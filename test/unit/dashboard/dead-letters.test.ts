import type { KafkaMessage } from 'kafkajs';
import { DeadLetterLog, previewOf } from '../../../src/dashboard';
import { toDeadLetter } from '../../../src/operations/dead-letters';

function letter(offset: number, timeMs: number, reason: string, originTopic: string, key: string) {
  return toDeadLetter('g.dlq', 0, {
    key: Buffer.from(key), value: Buffer.from(`{"n":${offset}}`), timestamp: String(timeMs), attributes: 0, offset: String(offset), size: 0,
    headers: {
      'lanes-origin-topic': originTopic, 'lanes-origin-partition': '1', 'lanes-origin-offset': String(100 + offset), 'lanes-kind': 'dead-letter',
      'lanes-attempt': '3', 'lanes-error-class': 'Error', 'lanes-error-message': 'payment refused', 'lanes-dead-letter-reason': reason,
    },
    // What kafkajs gives for a record of a record batch; only the fields above are read.
  } as unknown as KafkaMessage);
}

describe('the dashboard dead-letter log', () => {
  const minute = 60_000;
  const now = 100 * minute + 30_000;
  const log = new DeadLetterLog();
  log.add(letter(0, 98 * minute + 1, 'exhausted', 'orders', 'a'));
  log.add(letter(1, 99 * minute + 5, 'non-retriable', 'orders', 'b'));
  log.add(letter(2, 100 * minute + 5, 'exhausted', 'payments', 'a'));

  it('lists the newest first with reason, origin, attempt, error and a preview', () => {
    const page = log.page({});
    expect(page.total).toBe(3);
    expect(page.rows[0]).toEqual({
      partition: 0, offset: 2, timeMs: 100 * minute + 5, reason: 'exhausted', origin: { topic: 'payments', partition: 1, offset: 102 },
      lane: Buffer.from('a').toString('base64'), key: 'a', attempt: 3, error: 'Error: payment refused', preview: '{"n":2}', valueBytes: 7,
    });
    expect(page.reasons).toEqual(['exhausted', 'non-retriable']);
    expect(page.originTopics).toEqual(['orders', 'payments']);
  });

  it('filters by reason, origin topic and lane, and pages', () => {
    expect(log.page({ reason: 'exhausted' }).rows.map((r) => r.offset)).toEqual([2, 0]);
    expect(log.page({ originTopic: 'orders' }).rows.map((r) => r.offset)).toEqual([1, 0]);
    expect(log.page({ lane: Buffer.from('b').toString('base64') }).rows.map((r) => r.offset)).toEqual([1]);
    expect(log.page({ lane: 'a' }).rows.map((r) => r.offset)).toEqual([2, 0]);
    expect(log.page({ offset: 1, limit: 1 }).rows.map((r) => r.offset)).toEqual([1]);
  });

  it('counts dead letters per minute, the oldest minute first', () => {
    expect(log.perMinute(now, 3)).toEqual([[98 * minute, 1], [99 * minute, 1], [100 * minute, 1]]);
  });

  it('selects kept letters by their position for a replay', () => {
    expect(log.select([{ partition: 0, offset: 1 }, { partition: 3, offset: 1 }]).map((l) => l.record.offset)).toEqual([1]);
  });

  it('shows a value preview as text, control bytes as dots, long values cut', () => {
    expect(previewOf(null)).toBeNull();
    expect(previewOf(Buffer.from([0x68, 0x00, 0x69, 0xff]))).toBe('h.i.');
    expect(previewOf(Buffer.alloc(400, 'x'))).toMatch(/^x{160}…$/);
  });
});
