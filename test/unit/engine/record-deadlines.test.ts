import { DeadlineError } from '../../../src/errors';
import { RecordDeadlines, type RecordDeadline } from '../../../src/engine/record-deadlines';
import { engineRig, RIG_REF, sourceRecord } from '../../support/engine-rig';

/** Work that never settles: only the deadline can end a race on it. */
const forever = (): Promise<never> => new Promise<never>(() => undefined);

class TimeoutReason extends Error {}

/** A queue whose timeout reason is a new `TimeoutReason` each time, numbered, so a test can tell them apart. */
function deadlinesOf(timeoutMs: number): { deadlines: RecordDeadlines; made: TimeoutReason[] } {
  const made: TimeoutReason[] = [];
  const deadlines = new RecordDeadlines(timeoutMs, () => {
    const reason = new TimeoutReason(`timed out #${made.length}`);
    made.push(reason);
    return reason;
  });
  return { deadlines, made };
}

/** Settles `promise` into a value or a rejection reason without letting a rejection go unhandled. */
function outcomeOf<T>(promise: Promise<T>): { settled: () => { value?: T; error?: unknown } | undefined } {
  let result: { value?: T; error?: unknown } | undefined;
  promise.then((value) => {
    result = { value };
  }, (error: unknown) => {
    result = { error };
  });
  return { settled: () => result };
}

describe('RecordDeadlines (one timer per invocation for record timeouts)', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });

  afterEach(() => {
    expect(jest.getTimerCount()).toBe(0);
    jest.useRealTimers();
  });

  it('rejects a record that outlives the timeout with the timeout reason; a signal read before expiry aborts with it', async () => {
    // Prepare
    const { deadlines, made } = deadlinesOf(100);
    const deadline = deadlines.start();
    const signal = deadline.signal;
    const race = outcomeOf(deadline.race(forever()));

    // Act
    await jest.advanceTimersByTimeAsync(50);
    const early = { expired: deadline.expired, aborted: signal.aborted, settled: race.settled() };
    await jest.advanceTimersByTimeAsync(100);

    // Assess
    expect(early).toEqual({ expired: false, aborted: false, settled: undefined });
    expect(made).toHaveLength(1);
    expect(deadline.expired).toBe(true);
    expect(deadline.reason).toBe(made[0]);
    expect(race.settled()).toEqual({ error: made[0] });
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(made[0]);
    deadline.finish();
    deadlines.close();
  });

  it('gives a signal first read after expiry, already aborted with the timeout reason', async () => {
    const { deadlines, made } = deadlinesOf(100);
    const deadline = deadlines.start();
    const race = outcomeOf(deadline.race(forever()));

    await jest.advanceTimersByTimeAsync(150);

    expect(race.settled()).toEqual({ error: made[0] });
    expect(deadline.signal.aborted).toBe(true);
    expect(deadline.signal.reason).toBe(made[0]);
    deadlines.close();
  });

  it('rejects a race begun after expiry at once, with the reason, and swallows the abandoned work\'s rejection', async () => {
    const { deadlines, made } = deadlinesOf(10);
    const deadline = deadlines.start();
    await jest.advanceTimersByTimeAsync(20);
    let rejectWork: (error: unknown) => void = () => undefined;
    const work = new Promise<never>((_, reject) => {
      rejectWork = reject;
    });

    const race = outcomeOf(deadline.race(work));
    rejectWork(new Error('late failure'));
    await jest.advanceTimersByTimeAsync(0);

    expect(race.settled()).toEqual({ error: made[0] });
    deadlines.close();
  });

  it('never expires a record that finished in time, nor aborts its signal', async () => {
    const { deadlines, made } = deadlinesOf(100);
    const deadline = deadlines.start();
    const signal = deadline.signal;
    const race = outcomeOf(deadline.race(Promise.resolve('ok')));
    await jest.advanceTimersByTimeAsync(10);
    deadline.finish();

    await jest.advanceTimersByTimeAsync(1_000);

    expect(race.settled()).toEqual({ value: 'ok' });
    expect(deadline.expired).toBe(false);
    expect(signal.aborted).toBe(false);
    expect(made).toEqual([]);
    deadlines.close();
  });

  it('settles a race like its work when the work fails first: the handler\'s error, not the timeout', async () => {
    const { deadlines, made } = deadlinesOf(100);
    const deadline = deadlines.start();
    const failure = new Error('handler failed');

    const race = outcomeOf(deadline.race(Promise.reject(failure)));
    await jest.advanceTimersByTimeAsync(1);
    deadline.finish();
    await jest.advanceTimersByTimeAsync(500);

    expect(race.settled()).toEqual({ error: failure });
    expect(deadline.expired).toBe(false);
    expect(made).toEqual([]);
    deadlines.close();
  });

  it('settles a handed-over record through onExpiry when its deadline comes, once; never one finished in time', async () => {
    // Prepare: two records handed over (their work awaited alone), one finishing in time.
    const expired: Array<{ subject: unknown; reason: unknown }> = [];
    const made: TimeoutReason[] = [];
    const deadlines = new RecordDeadlines(100, () => {
      made.push(new TimeoutReason(`timed out #${made.length}`));
      return made[made.length - 1];
    }, (deadline) => expired.push({ subject: deadline.subject, reason: deadline.reason }));
    const late = deadlines.start('late');
    const early = deadlines.start('early');
    late.handOver();
    early.handOver();

    // Act
    await jest.advanceTimersByTimeAsync(50);
    early.finish();
    await jest.advanceTimersByTimeAsync(500);
    late.expire(new Error('again'));

    // Assess
    expect(expired).toEqual([{ subject: 'late', reason: made[0] }]);
    expect(late.handedOver && late.expired).toBe(true);
    expect(early.expired).toBe(false);
    deadlines.close();
  });

  it('calls no onExpiry for a record not handed over: its race alone rejects', async () => {
    const expired: unknown[] = [];
    const deadlines = new RecordDeadlines(100, () => new TimeoutReason('timed out'), (deadline) => expired.push(deadline.subject));
    const deadline = deadlines.start('raced');
    const race = outcomeOf(deadline.race(forever()));

    await jest.advanceTimersByTimeAsync(200);

    expect(race.settled()?.error).toBeInstanceOf(TimeoutReason);
    expect(expired).toEqual([]);
    deadlines.close();
  });

  it('expireAll expires every running record with its reason, and every record started after it at once', async () => {
    // Prepare: a finished record, two running ones (one with its signal read), the hard stop.
    const { deadlines, made } = deadlinesOf(10_000);
    const finished = deadlines.start();
    finished.finish();
    const first = deadlines.start();
    const firstSignal = first.signal;
    const firstRace = outcomeOf(first.race(forever()));
    const second = deadlines.start();
    const secondRace = outcomeOf(second.race(forever()));
    const stop = new Error('hard stop');

    // Act
    deadlines.expireAll(stop);
    const later = deadlines.start();
    const laterRace = outcomeOf(later.race(forever()));
    await jest.advanceTimersByTimeAsync(0);

    // Assess
    expect(finished.expired).toBe(false);
    expect(firstRace.settled()).toEqual({ error: stop });
    expect(secondRace.settled()).toEqual({ error: stop });
    expect(firstSignal.reason).toBe(stop);
    expect(second.signal.reason).toBe(stop);
    expect([later.expired, later.reason, later.signal.aborted, later.signal.reason]).toEqual([true, stop, true, stop]);
    expect(laterRace.settled()).toEqual({ error: stop });
    // The hard stop is not a timeout: no timeout reason was made, and none comes later.
    await jest.advanceTimersByTimeAsync(20_000);
    expect(made).toEqual([]);
    expect(first.reason).toBe(stop);
  });

  it('expires records finished out of order correctly: each running one at its own due time, finished ones never', async () => {
    // Prepare: a due at 100, b at 130, c at 160, d at 190 (timeout 100, started 30 ms apart).
    const { deadlines } = deadlinesOf(100);
    const started: RecordDeadline[] = [];
    for (let i = 0; i < 4; i += 1) {
      started.push(deadlines.start());
      await jest.advanceTimersByTimeAsync(30);
    }
    const [a, b, c, d] = started as [RecordDeadline, RecordDeadline, RecordDeadline, RecordDeadline];
    const expired = (): boolean[] => [a.expired, b.expired, c.expired, d.expired];

    // Act + Assess: the head (a) finishes last of the first three; b finishes before its due time.
    b.finish();
    await jest.advanceTimersByTimeAsync(0); // t = 120
    expect(expired()).toEqual([true, false, false, false]);
    a.finish();
    c.finish();
    await jest.advanceTimersByTimeAsync(45); // t = 165: c would be due, but finished
    expect(expired()).toEqual([true, false, false, false]);
    await jest.advanceTimersByTimeAsync(30); // t = 195: d is due
    expect(expired()).toEqual([true, false, false, true]);
    deadlines.close();
  });

  it('keeps the timer for later records when the head finishes first', async () => {
    const { deadlines, made } = deadlinesOf(100);
    const head = deadlines.start();
    await jest.advanceTimersByTimeAsync(50);
    const next = deadlines.start(); // due at 150
    head.finish();

    await jest.advanceTimersByTimeAsync(90); // t = 140
    expect(next.expired).toBe(false);
    await jest.advanceTimersByTimeAsync(20); // t = 160

    expect(next.expired).toBe(true);
    expect(next.reason).toBe(made[0]);
    expect(head.expired).toBe(false);
    deadlines.close();
  });

  it('expires exactly the unfinished ones of thousands of records, also once most of the queue is finished', async () => {
    // Prepare: 3,000 records at t = 0; all but two finish; 500 more start at t = 50.
    const { deadlines } = deadlinesOf(100);
    const first = Array.from({ length: 3_000 }, () => deadlines.start());
    first.forEach((deadline, i) => {
      if (i !== 1_500 && i !== 2_999) deadline.finish();
    });
    await jest.advanceTimersByTimeAsync(50);
    const second = Array.from({ length: 500 }, () => deadlines.start());
    second.forEach((deadline, i) => {
      if (i % 2 === 0) deadline.finish();
    });

    // Act + Assess
    await jest.advanceTimersByTimeAsync(60); // t = 110
    expect(first.flatMap((deadline, i) => (deadline.expired ? [i] : []))).toEqual([1_500, 2_999]);
    expect(second.some((deadline) => deadline.expired)).toBe(false);
    await jest.advanceTimersByTimeAsync(50); // t = 160
    expect(second.flatMap((deadline, i) => (deadline.expired ? [i] : []))).toEqual(Array.from({ length: 250 }, (_, i) => 2 * i + 1));
    deadlines.close();
  });

  it('makes no AbortSignal for a record whose signal is never read: race alone works', async () => {
    // Prepare: count AbortControllers made while the deadlines run.
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made += 1;
      }
    };
    try {
      const { deadlines, made: reasons } = deadlinesOf(100);
      const finishing = deadlines.start();
      const finished = outcomeOf(finishing.race(Promise.resolve(1)));
      const expiring = deadlines.start();
      const expired = outcomeOf(expiring.race(forever()));
      await jest.advanceTimersByTimeAsync(1);
      finishing.finish();

      // Act
      await jest.advanceTimersByTimeAsync(200);
      deadlines.expireAll(new Error('stop'));
      const beforeRead = made;
      const signal = expiring.signal;

      // Assess
      expect(finished.settled()).toEqual({ value: 1 });
      expect(expired.settled()).toEqual({ error: reasons[0] });
      expect(beforeRead).toBe(0);
      expect(made).toBe(1);
      expect(signal.reason).toBe(reasons[0]);
      expect(expiring.signal).toBe(signal);
    } finally {
      globalThis.AbortController = Original;
    }
  });

  it('clamps a negative timeout to zero: the record expires on the next timer turn', async () => {
    const { deadlines, made } = deadlinesOf(-5);
    const deadline = deadlines.start();
    expect(deadline.expired).toBe(false);

    await jest.advanceTimersByTimeAsync(5);

    expect(deadline.reason).toBe(made[0]);
    deadlines.close();
  });

  it.each([Infinity, 2 ** 31, 2_147_483_647, Number.MAX_SAFE_INTEGER])('never times a record out with a timeout of %p ms, and arms no timer', async (timeoutMs) => {
    const { deadlines, made } = deadlinesOf(timeoutMs);
    const deadline = deadlines.start();
    const race = outcomeOf(deadline.race(forever()));

    await jest.advanceTimersByTimeAsync(0);
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(3_000_000_000);

    expect([deadline.expired, race.settled(), made]).toEqual([false, undefined, []]);
    deadline.finish();
    deadlines.close();
  });

  it.each([Infinity, 2_147_483_647])('still expires a running record at the hard stop with a timeout of %p ms', async (timeoutMs) => {
    // Prepare: the largest `recordTimeoutMs` the options accept is 2,147,483,647.
    const { deadlines } = deadlinesOf(timeoutMs);
    const running = deadlines.start();
    const signal = running.signal;
    const race = outcomeOf(running.race(forever()));
    const stop = new Error('hard stop');

    // Act
    deadlines.expireAll(stop);
    await jest.advanceTimersByTimeAsync(0);

    // Assess
    expect(running.expired).toBe(true);
    expect(signal.reason).toBe(stop);
    expect(race.settled()).toEqual({ error: stop });
  });

  it('close clears the timer: nothing is left pending, and nothing expires afterwards', async () => {
    const { deadlines, made } = deadlinesOf(60_000);
    const running = deadlines.start();
    deadlines.start().finish();
    expect(jest.getTimerCount()).toBe(1);

    deadlines.close();

    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(120_000);
    expect(running.expired).toBe(false);
    expect(made).toEqual([]);
  });

  it('expireAll leaves no timer behind', () => {
    const { deadlines } = deadlinesOf(60_000);
    deadlines.start();
    expect(jest.getTimerCount()).toBe(1);

    deadlines.expireAll(new Error('stop'));

    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('record deadlines through Engine.run (real timers)', () => {
  it('aborts a handler that overruns recordTimeoutMs with a RecordTimeoutError; other records are unaffected', async () => {
    // Prepare: offset 0 hangs until its signal aborts, and remembers why.
    let reason: unknown;
    const r = engineRig({ recordTimeoutMs: 50 }, async (record, ctx) => {
      if (record.origin.offset !== 0) return;
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      reason = ctx.signal.reason;
    });

    // Act
    const response = await r.deliver([sourceRecord(0, 'A'), sourceRecord(1, 'B'), sourceRecord(2, 'A')]);

    // Assess: 0 timed out and went to the retry topic; 2 (same lane) was parked; 1 ran.
    expect(response.batchItemFailures).toEqual([]);
    expect((reason as Error).name).toBe('RecordTimeoutError');
    const [copy] = r.sink.take();
    expect(copy).toMatchObject({ origin: { offset: 0 }, attempt: 2, error: { name: 'RecordTimeoutError' } });
    expect(r.runs.map((run) => run.offset)).toEqual([0, 1]);
    expect(r.store.partition(RIG_REF).park.get(Buffer.from('A').toString('base64'))?.map((p) => p.offset)).toEqual([2]);
  });

  it('fails a handler that ignores its signal at its deadline and returns without waiting for it; its late success changes nothing', async () => {
    // Prepare: offset 0 ignores its signal and succeeds 400 ms later; offsets 1 (lane B) and 2 (lane A) are quick.
    let lateSuccess: Promise<void> | undefined;
    const r = engineRig({ recordTimeoutMs: 50 }, (record) => {
      if (record.origin.offset !== 0) return undefined;
      lateSuccess = new Promise<void>((resolve) => setTimeout(resolve, 400));
      return lateSuccess;
    });

    // Act
    const response = await r.deliver([sourceRecord(0, 'A'), sourceRecord(1, 'B'), sourceRecord(2, 'A')]);
    let settledBeforeReturn = false;
    void lateSuccess!.then(() => {
      settledBeforeReturn = true;
    });
    await Promise.resolve();
    const handlerStillRunning = !settledBeforeReturn;
    await lateSuccess;

    // Assess: the invocation returned while the handler ran; 0 went to the retry topic as timed out, 2 was parked.
    expect(handlerStillRunning).toBe(true);
    expect(response.batchItemFailures).toEqual([]);
    const copies = r.sink.take();
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatchObject({ origin: { offset: 0 }, attempt: 2, error: { name: 'RecordTimeoutError' } });
    expect(r.runs.map((run) => run.offset)).toEqual([0, 1]);
    expect(r.store.partition(RIG_REF).park.get(Buffer.from('A').toString('base64'))?.map((p) => p.offset)).toEqual([2]);
    expect(r.store.partition(RIG_REF).model.isDone(0)).toBe(true);
  });

  it.each([2_147_483_647, 2_000_000_000])('ends the invocation at the hard stop with recordTimeoutMs %p: a handler that never settles is handed off', async (recordTimeoutMs) => {
    // Prepare: a handler that ignores its signal and does not settle before the test ends (then it does, so a
    // stuck invocation cannot keep jest from exiting); the invocation has 1.6 s, margin 1 s.
    let release: () => void = () => undefined;
    const hanging = new Promise<void>((resolve) => {
      release = resolve;
    });
    const r = engineRig({ recordTimeoutMs }, () => hanging);
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<'stuck'>((resolve) => {
      timer = setTimeout(() => resolve('stuck'), 8_000);
    });

    // Act
    const invocation = r.deliver([sourceRecord(0, 'A')], 1_600);
    let ended: 'returned' | 'stuck';
    try {
      ended = await Promise.race([invocation.then(() => 'returned' as const), stuck]);
    } finally {
      clearTimeout(timer);
      release();
      await invocation;
    }

    // Assess: the record was aborted by the hard stop (DeadlineError) and handed off to the retry topic.
    expect(ended).toBe('returned');
    const [copy] = r.sink.take();
    expect(copy).toMatchObject({ origin: { offset: 0 }, error: { name: DeadlineError.name } });
  }, 30_000);
});
