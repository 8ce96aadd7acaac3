import { STEP_BLOCK, stepBlockKey, steppedKey, stepsKey } from '../../../src/completion/keys';
import { loadStepsCall, parseLoadStepsReply, parseSaveStepsReply, saveStepsCall } from '../../../src/completion/effects-store';
import { UnexpectedReplyError } from '../../../src/completion/errors';

const ref = { group: 'g', topic: 'orders', partition: 3 };

describe('saveStepsCall', () => {
  it('sends the marker, each step block once, and every save as four JSON entries naming its block', () => {
    const call = saveStepsCall([
      { at: { ref, offset: 5 }, name: 'charge', value: '{"id":"ch_1"}' },
      { at: { ref, offset: STEP_BLOCK + 2 }, name: 'mail', value: '' },
      { at: { ref, offset: 7 }, name: 'charge', value: '"x"' },
    ], 1_500.2);

    expect(call.keys).toEqual([steppedKey(ref), stepBlockKey(ref, 0), stepBlockKey(ref, 1)]);
    expect(call.argv.slice(0, 2)).toEqual(['1501', String(STEP_BLOCK + 2)]);
    expect(JSON.parse(String(call.argv[2]))).toEqual([2, '5', 'charge', '{"id":"ch_1"}', 3, String(STEP_BLOCK + 2), 'mail', '', 2, '7', 'charge', '"x"']);
  });

  it('sends a lone surrogate as U+FFFD, as UTF-8 would, so the script can decode the saves', () => {
    const call = saveStepsCall([{ at: { ref, offset: 1 }, name: 'a\uD800', value: 'x\uDC00y' }], 1_000);

    expect(JSON.parse(String(call.argv[2]))).toEqual([2, '1', 'a\uFFFD', 'x\uFFFDy']);
  });
});

describe('parseSaveStepsReply', () => {
  it('answers undefined for a stored result and the earlier result where one was stored before', () => {
    expect(parseSaveStepsReply([], 3)).toEqual([undefined, undefined, undefined]);
    expect(parseSaveStepsReply([2, Buffer.from('"first"')], 3)).toEqual([undefined, '"first"', undefined]);
  });

  it('refuses a reply that names no save of the call', () => {
    expect(() => parseSaveStepsReply([4, 'x'], 3)).toThrow(UnexpectedReplyError);
    expect(() => parseSaveStepsReply([1], 3)).toThrow(UnexpectedReplyError);
    expect(() => parseSaveStepsReply('OK', 3)).toThrow(UnexpectedReplyError);
  });
});

describe('loadStepsCall and its reply', () => {
  it('reads each record\'s field of its block and its hash of scripts version 11', () => {
    const call = loadStepsCall([{ ref, offset: 4 }, { ref, offset: STEP_BLOCK }]);

    expect(call.keys).toEqual([stepBlockKey(ref, 0), stepsKey({ ref, offset: 4 }), stepBlockKey(ref, 1), stepsKey({ ref, offset: STEP_BLOCK })]);
    expect(call.argv).toEqual(['4', String(STEP_BLOCK)]);
  });

  it('merges the two, the block\'s result first, and answers an empty map for a record with none', () => {
    const loaded = parseLoadStepsReply([
      ['{"charge":"\\"ch_1\\"","mail":""}', 'charge', '"old"', 'refund', '7'],
      [''],
    ], 2);

    expect([...loaded[0]!]).toEqual([['charge', '"ch_1"'], ['mail', ''], ['refund', '7']]);
    expect(loaded[1]!.size).toBe(0);
  });
});
