// Fixture tests for proofgraph's report parser: 3 pass, 1 fail, 1 skipped, 1 todo.
import { describe, test, expect } from 'vitest';

const add = (a, b) => a + b;

describe('math', () => {
  test('adds two numbers', () => {
    expect(add(1, 2)).toBe(3);
  });

  describe('nested', () => {
    test('adds negatives', () => {
      expect(add(-1, -2)).toBe(-3);
    });
    test('fails on purpose', () => {
      expect(add(2, 2)).toBe(5);
    });
  });

  test.skip('is skipped', () => {
    expect(true).toBe(false);
  });

  test.todo('handles overflow');
});

test('top-level test passes', () => {
  expect(add(0, 0)).toBe(0);
});
