// Fixture tests for proofgraph's report parser (node-tap, TAP 14 output):
// passes, a failure, a skip, a todo, and nested subtests.
const t = require('tap');

const add = (a, b) => a + b;

t.test('math', async (t) => {
  t.test('adds two numbers', async (t) => {
    t.equal(add(1, 2), 3);
  });
  t.test('nested', async (t) => {
    t.test('adds negatives', async (t) => {
      t.equal(add(-1, -2), -3);
    });
    t.test('fails on purpose', async (t) => {
      t.equal(add(2, 2), 5);
    });
  });
  t.test('is skipped', { skip: 'not ready' }, async () => {});
  t.test('handles overflow', { todo: 'later' });
});

t.test('top-level test passes', async (t) => {
  t.equal(add(0, 0), 0);
});
