import type { KafkaMessage, ProducerRecord } from 'kafkajs';
import type { CompletionStore } from '../../../src/completion/store';
import type { HandOffSink } from '../../../src/ports/handoff';
import { replayDeadLetters, toDeadLetter, REPLAY_OF_HEADER } from '../../../src/operations/dead-letters';
import { resolveOptions } from '../../../src/options';

/** A dead letter at `offset` of `orders-svc.dlq` partition 0, of origin `orders`-1 at 100 + offset, with these headers besides. */
function letter(offset: number, extra: Record<string, string> = {}) {
  return toDeadLetter('orders-svc.dlq', 0, {
    key: Buffer.from('c-1'), value: Buffer.from('{"n":1}'), timestamp: '1000', attributes: 0, offset: String(offset), size: 0,
    headers: {
      trace: 'abc', 'lanes-origin-topic': 'orders', 'lanes-origin-partition': '1', 'lanes-origin-offset': String(100 + offset),
      'lanes-kind': 'dead-letter', 'lanes-attempt': '3', 'lanes-dead-letter-reason': 'exhausted', ...extra,
    },
  } as unknown as KafkaMessage);
}

/** The operator parts of a group whose lanes are all free (no held head to resume): every letter is written back. */
function parts() {
  const options = resolveOptions({ group: 'orders-svc', ordering: 'unordered' }, {});
  const store = { laneHead: async () => undefined } as unknown as CompletionStore;
  const sink: HandOffSink = { write: async () => { throw new Error('a replay written back is not a hand-off'); } };
  return { options, store, sink };
}

function recordingProducer() {
  const sent: ProducerRecord[] = [];
  return { sent, send: async (record: ProducerRecord) => (sent.push(record), []) };
}

const text = (value: unknown): string => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value));

describe('dlq replay (operations/dead-letters.ts)', () => {
  it('writes a dead letter back to its origin topic, acks=all: its key, value and own headers, where it was read and its first origin', async () => {
    // Prepare
    const producer = recordingProducer();

    // Act
    const actions = await replayDeadLetters({ ...parts(), producer }, [letter(7)]);

    // Assess
    expect(actions.map((a) => a.action)).toEqual(['written-back']);
    expect(producer.sent).toHaveLength(1);
    const [record] = producer.sent;
    expect(record!.topic).toBe('orders');
    expect(record!.acks).toBe(-1);
    const [message] = record!.messages;
    expect(text(message!.key)).toBe('c-1');
    expect(text(message!.value)).toBe('{"n":1}');
    expect(Object.fromEntries(Object.entries(message!.headers ?? {}).map(([name, value]) => [name, text(value)]))).toEqual({
      trace: 'abc',
      [REPLAY_OF_HEADER]: 'orders-svc.dlq/0/7',
      'lanes-first-origin': 'orders/1/107',
    });
  });

  it('keeps the first origin of a dead letter that was replayed before', async () => {
    const producer = recordingProducer();

    await replayDeadLetters({ ...parts(), producer }, [letter(8, { 'lanes-first-origin': 'orders/1/3' })]);

    expect(text(producer.sent[0]!.messages[0]!.headers?.['lanes-first-origin'])).toBe('orders/1/3');
  });

  it('writes nothing in a dry run, and says what it would do', async () => {
    const producer = recordingProducer();

    const actions = await replayDeadLetters({ ...parts(), producer }, [letter(9)], { dryRun: true });

    expect(producer.sent).toEqual([]);
    expect(actions.map((a) => a.detail)).toEqual(['would be written back to orders as a new record (its order relative to later records of its key is not kept)']);
  });

  it("does not write back a letter whose value is the JSON its trigger's schema registry integration decoded, and says why", async () => {
    // Prepare
    const producer = recordingProducer();

    // Act
    const actions = await replayDeadLetters({ ...parts(), producer }, [letter(10, { 'lanes-esm-decoded': 'value' }), letter(11)]);

    // Assess: the other letter is written back; this one is skipped, naming what its value is.
    expect(actions.map((a) => [a.deadLetter.offset, a.action])).toEqual([[10, 'skipped'], [11, 'written-back']]);
    expect(actions[0]!.detail).toBe("not written back to orders: its value is the JSON its trigger's schema registry integration decoded (eventRecordFormat JSON), not the producer's bytes");
    expect(producer.sent).toHaveLength(1);
  });

  it('says a replay needs a producer when it would write a letter back without one; a dry run needs none', async () => {
    await expect(replayDeadLetters(parts(), [letter(12)])).rejects.toThrow(/dlq replay writes a dead letter back through a producer/);
    await expect(replayDeadLetters(parts(), [letter(12)], { dryRun: true })).resolves.toMatchObject([{ action: 'written-back' }]);
  });
});
