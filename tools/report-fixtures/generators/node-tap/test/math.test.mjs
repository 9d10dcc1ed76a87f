// Fixture tests for proofgraph's report parser (node:test, TAP 13 output):
// passes, a failure, a skip, a todo, and nested subtests.
import { test, describe, it } from 'node:test';
import assert from 'node:assert';

const add = (a, b) => a + b;

describe('math', () => {
  it('adds two numbers', () => {
    assert.strictEqual(add(1, 2), 3);
  });

  describe('nested', () => {
    it('adds negatives', () => {
      assert.strictEqual(add(-1, -2), -3);
    });
    it('fails on purpose', () => {
      assert.strictEqual(add(2, 2), 5);
    });
  });

  it('is skipped', { skip: 'not ready' }, () => {});
  it('handles overflow', { todo: 'later' }, () => {});
});

test('top-level test passes', () => {
  assert.strictEqual(add(0, 0), 0);
});
