import { didYouMean, editDistance } from '../../../src/options/suggest';

describe('editDistance', () => {
  it.each([
    ['', '', 0],
    ['abc', '', 3],
    ['', 'abc', 3],
    ['group', 'group', 0],
    ['concurency', 'concurrency', 1],
    ['kye', 'key', 1],
    ['ordering', 'odrering', 1],
    ['retry', 'redis', 3],
    ['kitten', 'sitting', 3],
  ])('%p to %p is %p', (a, b, distance) => {
    // Act
    const computed = editDistance(a, b);

    // Assess
    expect(computed).toBe(distance);
  });
});

describe('didYouMean', () => {
  const keys = ['group', 'ordering', 'keyOf', 'key', 'value', 'concurrency', 'retry', 'redis'];

  it.each([
    ['concurency', 'concurrency'],
    ['Concurrency', 'concurrency'],
    ['keyof', 'keyOf'],
    ['kye', 'key'],
    ['groop', 'group'],
    ['ordring', 'ordering'],
    ['vaule', 'value'],
    ['retyr', 'retry'],
  ])('suggests %p -> %p', (word, suggestion) => {
    // Act
    const suggested = didYouMean(word, keys);

    // Assess
    expect(suggested).toBe(suggestion);
  });

  it.each([['banana'], ['k'], ['parallelism'], ['retries']])('suggests nothing for %p', (word) => {
    // Act
    const suggested = didYouMean(word, keys);

    // Assess
    expect(suggested).toBeUndefined();
  });
});
