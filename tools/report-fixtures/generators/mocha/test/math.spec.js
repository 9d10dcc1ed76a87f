// Fixture tests for proofgraph's report parser: 3 pass, 1 fail, 2 pending.
const assert = require('node:assert');

const add = (a, b) => a + b;

describe('math', function () {
  it('adds two numbers', function () {
    assert.strictEqual(add(1, 2), 3);
  });

  describe('nested', function () {
    it('adds negatives', function () {
      assert.strictEqual(add(-1, -2), -3);
    });
    it('fails on purpose', function () {
      assert.strictEqual(add(2, 2), 5);
    });
  });

  it.skip('is skipped', function () {
    assert.fail('never runs');
  });

  // A test without a body is "pending" in mocha (its closest thing to a todo).
  it('handles overflow');
});

it('top-level test passes', function () {
  assert.strictEqual(add(0, 0), 0);
});
