import { escapeName, legacyStepsKey, outputClaimKey, outputClaimTag, parkKey, partitionKeys, partitionTag, steppedKey, STEPS_PER_BLOCK, stepsBlockKey } from '../../../src/completion/keys';
import { claimOutputsCall, loadStepsCall, parseClaimOutputsReply, saveStepsCall } from '../../../src/completion/effects-store';
import type { OutputId } from '../../../src/ports/effects';
import {
  admitCall,
  blockCall,
  claimCall,
  markCall,
  stepBlocks,
  parseAdmitReply,
  parseClaimReply,
  parseFrontierReply,
  parseMarkReply,
  parseReleaseReply,
  rebuildRecordsCall,
  releaseCall,
} from '../../../src/completion/args';
import { UnexpectedReplyError } from '../../../src/completion/errors';
import { LaneConflictError, NotAdmittedError, NotHeadError, StaleEpochError } from '../../../src/ports/errors';

const ref = { group: 'orders', topic: 'orders-v1', partition: 3 };
const caps = { maxWindow: 1000, maxParked: 10, maxParkedBytes: 4096 };

/** Redis Cluster hashes only what lies between the first `{` and the next `}`. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return key.slice(open + 1, close);
}

describe('key names', () => {
  it('puts every key of a partition under one hash tag', () => {
    const keys = partitionKeys(ref);
    const tags = [keys.bits, keys.meta, keys.lanes, parkKey(ref, 'a2V5')].map(hashTagOf);
    expect(new Set(tags)).toEqual(new Set(['kl:orders:orders-v1:3']));
  });

  it.each([
    ['braces', 'g{1}'],
    ['a closing brace', 'g}x'],
    ['colons', 'a:b:c'],
    ['a percent sign', '100%'],
  ])('escapes %s in a group name so the tag stays whole', (_what, group) => {
    const key = partitionKeys({ ...ref, group }).bits;
    expect(hashTagOf(key)).toBe(`kl:${escapeName(group)}:orders-v1:3`);
    expect(escapeName(group)).not.toMatch(/[{}:]/);
  });

  it('keeps distinct names distinct after escaping', () => {
    expect(partitionTag({ ...ref, group: 'a:b', topic: 'c' })).not.toBe(partitionTag({ ...ref, group: 'a', topic: 'b:c' }));
    expect(escapeName('%3A')).not.toBe(escapeName(':'));
  });
});

describe('admitCall', () => {
  const batch = [
    { offset: 10, lane: 'A', payload: 'p10' },
    { offset: 11 },
    { offset: 12, lane: 'B', payload: () => 'p12' },
    { offset: 13, lane: 'A', payload: () => 'p13' },
  ];

  it('names each distinct lane once, indexes records to it, and sends no payload and no park key at first', () => {
    const call = admitCall(ref, batch, { caps, epoch: 7 });
    expect(call.keys.slice(3)).toEqual([]);
    // Offsets as one string of distances from the one before, lane indexes as another: two arguments per batch.
    expect(call.argv).toEqual(['7', '1000', '10', '4096', '4', '2', 'A', 'B', '10 1 1 1', '1 0 2 1', '']);
  });

  it('sends the payloads of the lanes the script asked for, building lazy ones only then', () => {
    const built: string[] = [];
    const lazy = batch.map((r) => (typeof r.payload === 'function' ? { ...r, payload: () => (built.push(r.payload()), r.payload()) } : r));
    const call = admitCall(ref, lazy, { caps, epoch: 7, sendPayloadsOf: new Set(['A']) });
    // The park list of those lanes (lane 1, 'A'), then pairs of record index (0-based) and payload, for their records only.
    expect(call.keys.slice(3)).toEqual([parkKey(ref, 'A')]);
    expect(call.argv.slice(8)).toEqual(['10 1 1 1', '1 0 2 1', '1', '0', 'p10', '3', 'p13']);
    expect(built).toEqual(['p13']);
  });

  it('rejects offsets that do not ascend', () => {
    expect(() => admitCall(ref, [{ offset: 5 }, { offset: 5 }], { caps, epoch: 0 })).toThrow(RangeError);
  });
});

describe('blockCall', () => {
  it('rejects parking a record at or below the head', () => {
    const head = { lane: 'A', offset: 9, attempt: 2, state: 'retrying' as const };
    expect(() => blockCall(ref, { head, parked: [{ offset: 9, payload: 'x' }], nowMs: 1 })).toThrow(RangeError);
  });
});

describe('reply parsers', () => {
  it('maps admit statuses and hand-off attempts', () => {
    const result = parseAdmitReply([1, 'rdpch', '10', '20', '12', ['14|3|retrying|1000|61000|']], 5, 'admit');
    if ('payloadsNeeded' in result) throw new Error('expected a result');
    expect(result.statuses).toEqual(['run', 'duplicate', 'parked', 'refused', 'handoff']);
    expect(result.handoffHeads).toEqual([{ lane: '', offset: 14, attempt: 3, state: 'retrying', dueAtMs: 61000, reason: '', leaseUntilMs: 0 }]);
    expect(result.backPressure).toBe(true);
    expect(result.window).toEqual({ base: 10, highest: 20, frontier: 12 });
  });

  it('reads the lanes whose payloads the admit script needs', () => {
    expect(parseAdmitReply([2, ['A', 'B']], 3, 'admit')).toEqual({ payloadsNeeded: ['A', 'B'] });
  });

  it.each([
    [[-1], StaleEpochError],
    [[-2, '99'], NotAdmittedError],
    [[-3, '4'], LaneConflictError],
    [[-4, ''], NotHeadError],
    [[-9], UnexpectedReplyError],
    ['nonsense', UnexpectedReplyError],
  ])('turns reply %j into %p', (reply, errorClass) => {
    expect(() => parseMarkReply(reply, 'mark')).toThrow(errorClass);
  });

  it('names the offending offset of a mark that was never admitted', () => {
    expect(() => parseMarkReply([-2, '99'], 'mark t-0')).toThrow('offset 99 was never admitted');
  });

  it('reads a frontier, or none before anything was admitted', () => {
    expect(parseFrontierReply([0, '8', '30', '17', 1], 'f')).toEqual({ base: 8, highest: 30, frontier: 17, trimmedBytes: 1 });
    expect(parseFrontierReply([1], 'f')).toBeUndefined();
  });

  it('reads a release: a new head, a freed lane, or not the head', () => {
    expect(parseReleaseReply([1, '12', 'payload'], 'r')).toEqual({ offset: 12, payload: 'payload' });
    expect(parseReleaseReply([0], 'r')).toBeUndefined();
    expect(() => parseReleaseReply([-4, '11'], 'r')).toThrow(NotHeadError);
  });

  it('reads a claim: claimed, another copy\'s claim and its end, or not the head with what the head is', () => {
    expect(parseClaimReply([0], 'c', 'L')).toEqual({ status: 'claimed' });
    expect(parseClaimReply([2, '1700000005000'], 'c', 'L')).toEqual({ status: 'claimed-elsewhere', untilMs: 1_700_000_005_000 });
    expect(parseClaimReply([1, ''], 'c', 'L')).toEqual({ status: 'not-head', head: undefined });
    expect(parseClaimReply([1, '4|3|held|1|2|fatal|'], 'c', 'L')).toMatchObject({ status: 'not-head', head: { lane: 'L', offset: 4, attempt: 3, state: 'held' } });
    expect(() => parseClaimReply([-9], 'c', 'L')).toThrow(UnexpectedReplyError);
  });

  it('rejects a status count that does not match the records', () => {
    expect(() => parseAdmitReply([0, 'rr', '1', '2', '1', []], 3, 'admit')).toThrow(UnexpectedReplyError);
  });
});

describe('rebuildRecordsCall', () => {
  it("names the park list of each of the chunk's lanes after the state's keys, and sends the records as (offset, lane, payload) triples", () => {
    const chunk = { from: 20, to: 24, lanes: ['TA==', 'Qg=='], records: [{ offset: 20, lane: 1, payload: 'p20' }, { offset: 22, lane: 0, payload: '' }, { offset: 23, lane: 2, payload: 'p23' }] };
    const keys = partitionKeys(ref);
    expect(rebuildRecordsCall(ref, chunk, 100)).toEqual({
      keys: [keys.bits, keys.meta, keys.lanes, parkKey(ref, 'TA=='), parkKey(ref, 'Qg==')],
      argv: ['100', '20', '24', '2', 'TA==', 'Qg==', '20', '1', 'p20', '22', '0', '', '23', '2', 'p23'],
    });
  });
});

describe('releaseCall', () => {
  it("sends the caller's hold on the head: a drained head's lease, a copy's claim, or none (anyone may release)", () => {
    const release = { lane: 'TA==', headOffset: 4, nowMs: 100, leaseUntilMs: 900 };
    expect(releaseCall(ref, release).argv).toEqual(['TA==', '4', '1', '100', '900', '']);
    expect(releaseCall(ref, { ...release, hold: { lease: 800 } }).argv.at(-1)).toBe('lease:800');
    expect(releaseCall(ref, { ...release, hold: { claim: 'orders.retry.1s:0:3' } }).argv.at(-1)).toBe('claim:orders.retry.1s:0:3');
  });
});

describe('claimCall', () => {
  it('sends the lane, the expected head, the copy, now and the claim end rounded up, on the lanes key only', () => {
    const call = claimCall(partitionKeys(ref), 'TA==', { offset: 4, attempt: 2 }, { copy: 'orders.retry.1s:0:3', nowMs: 100, untilMs: 200.4 });
    expect(call).toEqual({ keys: [partitionKeys(ref).lanes], argv: ['TA==', '4', '2', 'orders.retry.1s:0:3', '100', '201'] });
  });

  it('rejects a copy id holding the entry separator', () => {
    expect(() => claimCall(partitionKeys(ref), 'L', { offset: 0, attempt: 1 }, { copy: 'a|b', nowMs: 0, untilMs: 1 })).toThrow(RangeError);
  });
});

describe('markCall', () => {
  it('sends the epoch then the offsets sorted, as one string of distances', () => {
    expect(markCall(partitionKeys(ref), [2, 1e12, 1], 4).argv).toEqual(['4', '1 1 999999999998']);
    expect(markCall(partitionKeys(ref), [2 ** 53 - 1, 5], 0).argv).toEqual(['0', `5 ${2 ** 53 - 6}`]);
  });

  it('passes the step blocks to delete from as keys after bits and meta, each with its records, all under the partition\'s tag', () => {
    const keys = partitionKeys(ref);
    const call = markCall(keys, [3, 4, 70], 0, stepBlocks(ref, [{ offset: 3, names: ['a', 'b c'] }, { offset: 70, names: ['a'] }, { offset: 4, names: ['a'] }]));
    expect(call.keys).toEqual([keys.bits, keys.meta, stepsBlockKey({ ref, offset: 0 }), stepsBlockKey({ ref, offset: 64 })]);
    expect(call.argv).toEqual(['0', '3 1 66', '3 1', '3:a', '3:b c', '4:a', '70:a']);
    expect(new Set(call.keys.map((key) => key.slice(0, key.indexOf('}') + 1))).size).toBe(1);
  });
});

describe('step blocks', () => {
  it(`keeps the results of ${STEPS_PER_BLOCK} offsets, from a multiple of ${STEPS_PER_BLOCK}, under one key of the partition's tag`, () => {
    const blockOf = (offset: number) => stepsBlockKey({ ref, offset });
    const n = STEPS_PER_BLOCK;
    expect([blockOf(0), blockOf(n - 1), blockOf(n), blockOf(2 ** 40 + 5)]).toEqual([
      `${partitionTag(ref)}:stepsblock:0`, `${partitionTag(ref)}:stepsblock:0`, `${partitionTag(ref)}:stepsblock:${n}`, `${partitionTag(ref)}:stepsblock:${2 ** 40}`,
    ]);
  });

  it('stores the steps of a call in the blocks of its records, each block named once, with the highest offset', () => {
    const saves = [70, 3, 64, 5].map((offset) => ({ at: { ref, offset }, name: `s${offset}`, value: `"v${offset}"` }));
    const call = saveStepsCall(saves, 1_000.5);
    expect(call.keys).toEqual([steppedKey(ref), stepsBlockKey({ ref, offset: 64 }), stepsBlockKey({ ref, offset: 0 })]);
    expect(call.argv).toEqual(['1001', '70', '1', '70:s70', '"v70"', '2', '3:s3', '"v3"', '1', '64:s64', '"v64"', '2', '5:s5', '"v5"']);
  });

  it('reads a record from its block and from its hash of scripts version 11', () => {
    const call = loadStepsCall([{ ref, offset: 3 }, { ref, offset: 99 }]);
    expect(call.keys).toEqual([stepsBlockKey({ ref, offset: 3 }), stepsBlockKey({ ref, offset: 99 }), legacyStepsKey({ ref, offset: 3 }), legacyStepsKey({ ref, offset: 99 })]);
    expect(call.argv).toEqual(['3', '99']);
  });

  it('groups the steps of records by block, in the order their blocks first come, and leaves out records without steps', () => {
    const steps = (offset: number, ...names: string[]) => ({ offset, names });
    expect(stepBlocks(ref, [steps(130, 'a'), steps(1, 'a', 'b'), steps(129, 'a'), steps(2, 'x:y'), steps(64)])).toEqual([
      { key: stepsBlockKey({ ref, offset: 128 }), fields: ['130:a', '129:a'] },
      { key: stepsBlockKey({ ref, offset: 0 }), fields: ['1:a', '1:b', '2:x:y'] },
    ]);
  });
});

describe('claimOutputsCall', () => {
  const id = (partition: number, offset: number, index = 0): OutputId => ({ group: 'stage-1', origin: { topic: 'orders', partition, offset }, index });

  it('names each output claim under its origin partition tag, with its taker and the longest time to live', () => {
    const call = claimOutputsCall([
      { key: outputClaimKey('g', id(2, 7)), runner: 'mid/0/10', ttlMs: 1_000.5 },
      { key: outputClaimKey('g', id(2, 8, 1)), runner: 'mid/0/11', ttlMs: 60_000 },
    ]);
    expect(call).toEqual({
      keys: ['{kl:g:out:stage-1:orders:2}:7:0', '{kl:g:out:stage-1:orders:2}:8:1'],
      argv: ['60000', 'mid/0/10', 'mid/0/11'],
    });
    expect(outputClaimTag('g', id(2, 7))).toBe('{kl:g:out:stage-1:orders:2}');
  });

  it('reads one outcome per claim: taken, or refused with the other taker; any other reply is an error', () => {
    expect(parseClaimOutputsReply([0, ['mid/1/3'], 0], 3)).toEqual([true, false, true]);
    expect(() => parseClaimOutputsReply([0], 2)).toThrow('claimOutputs: unexpected reply [0]');
  });
});
