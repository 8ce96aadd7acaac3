import { ConfigError } from '../../../src/errors';
import { parseDuration } from '../../../src/options';

describe('parseDuration', () => {
  it.each([
    ['1ms', 1],
    ['250ms', 250],
    ['5s', 5_000],
    ['90s', 90_000],
    ['1m', 60_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['168h', 604_800_000],
  ])('reads %p as %p ms', (text, ms) => {
    // Act
    const parsed = parseDuration(text);

    // Assess
    expect(parsed).toBe(ms);
  });

  it.each([
    [''],
    ['5'],
    ['s'],
    ['0s'],
    ['05s'],
    ['-5s'],
    ['+5s'],
    ['1.5s'],
    ['5 s'],
    [' 5s'],
    ['5S'],
    ['5sec'],
    ['1d'],
    ['5s5'],
    ['1e3ms'],
    ['99999999999999999999h'],
  ])('rejects %p with a ConfigError saying what a duration is', (text) => {
    // Act
    const act = (): number => parseDuration(text);

    // Assess
    expect(act).toThrow(ConfigError);
    expect(act).toThrow(`Invalid duration \`${text}\` (string): expected a duration \`<integer><unit>\``);
  });

  it('rejects a value that is not a string, naming its type', () => {
    // Act
    const act = (): number => parseDuration(5 as unknown as string);

    // Assess
    expect(act).toThrow('Invalid duration `5` (number)');
  });
});
