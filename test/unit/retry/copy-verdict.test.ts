/** The rules of a retry copy that looked at its lane's head (`classifyCopy`): run, stale, twin, watch, keep, unwatch. */
import { classifyCopy, judgeCopy, placeOf, recheckLater, type AskedFact, type CopySituation } from '../../../src/retry/copy-verdict';
import { RECOVERY_RECHECK_MS } from '../../../src/durability/first-minute';
import type { HandOffItem } from '../../../src/ports/handoff';

const T0 = 1_750_000_000_000;

describe('what a retry copy does once it has looked at its head', () => {
  it.each<[string, CopySituation, ReturnType<typeof classifyCopy>]>([
    ['its head, due: runs', { due: true, place: 'head' }, { do: 'run' }],
    ['its head, not due: waits to run', { due: false, place: 'head' }, { do: 'run' }],
    ['a twin holds the claim: back until it ends', { due: true, place: 'twin', claimedUntilMs: T0 + 900 }, { do: 'twin', untilMs: T0 + 900 }],
    ['a held head\'s watch copy, due: asks for the marker', { due: true, place: 'held' }, { ask: 'marked' }],
    ['...unmarked: watches on', { due: true, place: 'held', marked: 'unmarked' }, { do: 'watch' }],
    ['...marked: done', { due: true, place: 'held', marked: 'marked' }, { do: 'unwatch' }],
    ['...a store that cannot tell: done', { due: true, place: 'held', marked: 'unknown' }, { do: 'unwatch' }],
    ['a held head\'s watch copy, not due: waits, the marker unread', { due: false, place: 'held' }, { do: 'watch' }],
    ['its lane free: asks for the loss verdict', { due: true, place: 'free' }, { ask: 'lost' }],
    ['its lane free, the state lost: kept', { due: true, place: 'free', lost: true }, { do: 'keep' }],
    ['its lane free, the state whole: stale, the marker unread', { due: true, place: 'free', lost: false }, { do: 'stale' }],
    ['its head behind it, the state lost: kept', { due: false, place: 'behind', lost: true }, { do: 'keep' }],
    ['its head behind it, the state whole: stale', { due: true, place: 'behind', lost: false }, { do: 'stale' }],
    ['its lane moved past it: asks for the loss verdict first', { due: true, place: 'past' }, { ask: 'lost' }],
    ['...then, no loss, for the marker', { due: true, place: 'past', lost: false }, { ask: 'marked' }],
    ['...lost: kept, the marker unread', { due: true, place: 'past', lost: true }, { do: 'keep' }],
    ['...whole, unmarked: watches its lane', { due: true, place: 'past', lost: false, marked: 'unmarked' }, { do: 'watch' }],
    ['...whole, marked: stale', { due: true, place: 'past', lost: false, marked: 'marked' }, { do: 'stale' }],
    ['...whole, a store that cannot tell: stale', { due: false, place: 'past', lost: false, marked: 'unknown' }, { do: 'stale' }],
    ['a later attempt of its origin is the head: asks for the marker', { due: true, place: 'spent' }, { ask: 'marked' }],
    ['...unmarked: watches its lane (that attempt\'s copy may not be written yet)', { due: true, place: 'spent', marked: 'unmarked' }, { do: 'watch' }],
    ['...marked: stale', { due: true, place: 'spent', marked: 'marked' }, { do: 'stale' }],
    ['...a store that cannot tell: stale', { due: false, place: 'spent', marked: 'unknown' }, { do: 'stale' }],
    ['an unordered copy whose claim was refused: stale, nothing read', { due: true, place: 'refused' }, { do: 'stale' }],
  ])('%s', (_name, situation, expected) => {
    expect(classifyCopy(situation)).toEqual(expected);
  });

  it('reads each fact once, and only those the rules reached ask for', async () => {
    const asked: AskedFact[] = [];
    const verdict = await judgeCopy({ due: true, place: 'past' }, (fact) => {
      asked.push(fact);
      return Promise.resolve(fact === 'lost' ? false : 'unmarked');
    });
    expect({ verdict, asked }).toEqual({ verdict: { do: 'watch' }, asked: ['lost', 'marked'] });
    const refused: AskedFact[] = [];
    await judgeCopy({ due: true, place: 'refused' }, (fact) => (refused.push(fact), Promise.resolve(true)));
    expect(refused).toEqual([]);
  });
});

describe('where the head stands against a copy of origin 7, attempt 2', () => {
  const copy = { origin: { offset: 7 }, attempt: 2 };
  it.each([
    ['no head', undefined, 'free'],
    ['the copy\'s own head', { offset: 7, attempt: 2, state: 'retrying' }, 'head'],
    ['its origin held, any attempt', { offset: 7, attempt: 1, state: 'held' }, 'held'],
    ['a later record', { offset: 9, attempt: 1, state: 'retrying' }, 'past'],
    ['a later record, held', { offset: 9, attempt: 3, state: 'held' }, 'past'],
    ['an earlier record', { offset: 5, attempt: 4, state: 'retrying' }, 'behind'],
    ['its origin at an earlier attempt', { offset: 7, attempt: 1, state: 'retrying' }, 'behind'],
    ['its origin at a later attempt', { offset: 7, attempt: 3, state: 'retrying' }, 'spent'],
  ] as const)('%s', (_name, head, place) => {
    expect(placeOf(copy, head)).toBe(place);
  });
});

describe('when a copy written back looks again', () => {
  const writeBack = { topic: 'grp.retry.5s', dueAtMs: T0 - 10 } as HandOffItem;
  it('a recheck interval from now, or when a twin\'s claim ends, never before its own due time', () => {
    expect(recheckLater({ dueAtMs: T0 - 10, writeBack }, T0)).toEqual({ ...writeBack, dueAtMs: T0 + RECOVERY_RECHECK_MS });
    expect(recheckLater({ dueAtMs: T0 - 10, writeBack }, T0, T0 + 900)).toEqual({ ...writeBack, dueAtMs: T0 + 900 });
    expect(recheckLater({ dueAtMs: T0 + 60_000, writeBack }, T0).dueAtMs).toBe(T0 + 60_000);
  });
});
