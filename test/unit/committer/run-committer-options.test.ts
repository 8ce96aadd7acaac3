import { runCommitter, type RunCommitterOptions } from '../../../src/committer/committer';
import type { OffsetCommitter } from '../../../src/committer/offset-committer';
import { ConfigError } from '../../../src/errors';

/** A store whose every use fails the test: options are checked before any I/O. */
const untouchable = new Proxy(
  {},
  {
    get(_, name) {
      throw new Error(`store.${String(name)} used before the options were checked`);
    },
  },
) as RunCommitterOptions['store'];

const committer: OffsetCommitter = {
  groupId: 'g.lanes',
  fetchCommitted: async () => [],
  commit: async () => undefined,
};

describe('runCommitter options', () => {
  it.each([
    ['an empty group', { group: '' }, 'Expected `group` to be a non-empty string, got `` (string)'],
    ['a zero lease', { group: 'g', leaseTtlMs: 0 }, 'Expected `leaseTtlMs` to be a positive integer, got `0` (number)'],
    ['a fractional lease', { group: 'g', leaseTtlMs: 1.5 }, 'Expected `leaseTtlMs` to be a positive integer'],
    ['a non-boolean trim', { group: 'g', trim: 'yes' }, 'Expected `trim` to be a boolean, got `yes` (string)'],
  ])('rejects %s before touching Redis or Kafka', async (_, given, message) => {
    const options = { store: untouchable, committer, ...given } as unknown as RunCommitterOptions;
    await expect(runCommitter(options)).rejects.toThrow(ConfigError);
    await expect(runCommitter(options)).rejects.toThrow(message);
  });

  it.each([
    ['no committer', {}, 'got `undefined`'],
    ['a kafkajs client instead of a committer', { committer: { admin: () => undefined } }, 'got '],
    ['the options of the former admin way', { kafka: {} }, 'got `undefined`'],
  ])('asks for an OffsetCommitter: rejects %s', async (_, given, detail) => {
    const options = { store: untouchable, group: 'g', ...given } as unknown as RunCommitterOptions;
    await expect(runCommitter(options)).rejects.toThrow(ConfigError);
    await expect(runCommitter(options)).rejects.toThrow(
      'Expected `committer` to be an OffsetCommitter (e.g. `new MemberlessOffsetCommitter(kafka, group)`), ' + detail,
    );
  });
});
