import { parsePosition } from '../../../src/cli/commands/dlq';

describe('parsePosition', () => {
  it.each([
    ['0@41', { partition: 0, offset: 41 }],
    ['12@0', { partition: 12, offset: 0 }],
    ['41', { partition: 0, offset: 41 }],
  ])('reads %p as dlq list prints it', (text, position) => {
    expect(parsePosition(text)).toEqual(position);
  });

  it.each(['', '0@', '@3', '-1@2', '0@1.5', 'orders-0@3'])('refuses %p, naming the expected form', (text) => {
    expect(() => parsePosition(text)).toThrow(`Expected \`--position <partition>@<offset>\` as \`dlq list\` prints it (e.g. \`0@41\`), got \`${text}\``);
  });
});
