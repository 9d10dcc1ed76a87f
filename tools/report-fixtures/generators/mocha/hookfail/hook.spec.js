// A suite whose before() hook throws: mocha reports a hook failure, and the
// tests inside never run (runner error rather than a test failure).
const assert = require('node:assert');

describe('db', function () {
  before(function () {
    throw new Error('could not connect on purpose');
  });
  it('reads a row', function () {
    assert.ok(true);
  });
});

it('independent test passes', function () {
  assert.ok(true);
});
