import { BadRequest, parseDeadLetterQuery, parseLanesQuery, parseReleaseRequest, parseReplayRequest } from '../../../src/dashboard';

const params = (text: string): URLSearchParams => new URLSearchParams(text);

describe('dashboard query parameters', () => {
  it('defaults the lanes page to the oldest first, 50 rows', () => {
    expect(parseLanesQuery(params('token=abc'))).toEqual({ sort: 'age', descending: false, offset: 0, limit: 50 });
  });

  it('reads every lanes parameter', () => {
    expect(parseLanesQuery(params('sort=attempt&dir=desc&state=held&topic=orders&partition=3&offset=100&limit=20'))).toEqual({
      sort: 'attempt', descending: true, state: 'held', topic: 'orders', partition: 3, offset: 100, limit: 20,
    });
  });

  it.each([
    ['sort=oldest', /`sort` to be one of age, attempt/],
    ['dir=up', /`dir` to be asc or desc, got "up"/],
    ['state=stuck', /`state` to be retrying or held/],
    ['partition=-1', /`partition` to be an integer from 0/],
    ['partition=1e3', /`partition` to be an integer/],
    ['limit=0', /`limit` to be an integer from 1 to 500, got "0"/],
    ['limit=100000', /`limit` to be an integer from 1 to 500/],
    ['offset=abc', /`offset` to be an integer/],
    ['page=2', /Unknown query parameter `page`; expected one of sort, dir/],
    ['sort=age&sort=key', /`sort` once, got it 2 times/],
    [`topic=${'x'.repeat(600)}`, /`topic` to be at most 512 characters/],
  ])('refuses lanes %s with a message saying what was expected', (text, message) => {
    expect(() => parseLanesQuery(params(text))).toThrow(BadRequest);
    expect(() => parseLanesQuery(params(text))).toThrow(message);
  });

  it('reads the dead-letter filters', () => {
    expect(parseDeadLetterQuery(params('reason=exhausted&topic=orders&lane=Y3VzdA%3D%3D&limit=10'))).toEqual({
      reason: 'exhausted', originTopic: 'orders', lane: 'Y3VzdA==', offset: 0, limit: 10,
    });
    expect(parseDeadLetterQuery(params('key=c-1&since=1764000000000&until=1764000060000'))).toEqual({
      key: 'c-1', sinceMs: 1_764_000_000_000, untilMs: 1_764_000_060_000, offset: 0, limit: 50,
    });
    expect(() => parseDeadLetterQuery(params('since=yesterday'))).toThrow(/Expected `since` to be an integer/);
    expect(() => parseDeadLetterQuery(params('sort=age'))).toThrow(/Unknown query parameter `sort`/);
  });
});

describe('dashboard action bodies', () => {
  it('reads a confirmed release', () => {
    expect(parseReleaseRequest({ topic: 'orders', partition: 2, lane: 'Y3VzdA==', confirmed: true })).toEqual({ topic: 'orders', partition: 2, lane: 'Y3VzdA==' });
  });

  it.each([
    [{ topic: 'orders', partition: 2, lane: 'x' }, /`confirmed: true`/],
    [[], /a JSON object/],
    [null, /a JSON object/],
    [{ topic: '', partition: 2, lane: 'x', confirmed: true }, /`topic` to be a non-empty string/],
    [{ topic: 'orders', partition: 1.5, lane: 'x', confirmed: true }, /`partition` to be a non-negative integer, got "1.5"/],
    [{ topic: 'orders', partition: 1, confirmed: true }, /`lane` to be a non-empty string/],
  ])('refuses the release body %j', (body, message) => {
    expect(() => parseReleaseRequest(body)).toThrow(message);
  });

  it('reads a confirmed replay of a selection and refuses an empty or malformed one', () => {
    expect(parseReplayRequest({ letters: [{ partition: 0, offset: 7 }], confirmed: true })).toEqual({ letters: [{ partition: 0, offset: 7 }] });
    expect(() => parseReplayRequest({ letters: [], confirmed: true })).toThrow(/list of 1 to 500/);
    expect(() => parseReplayRequest({ letters: [{ partition: 0 }], confirmed: true })).toThrow(/`letters\[0\]\.offset`/);
    expect(() => parseReplayRequest({ letters: [5], confirmed: true })).toThrow(/`letters\[0\]` to be/);
  });
});
