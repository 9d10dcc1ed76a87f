// node-tap test that bails out after one passing test: the TAP stream gets a
// "Bail out!" line and the remaining planned tests never run.
const t = require('tap');

t.plan(3);
t.pass('first check passes');
t.bailout('database unavailable');
t.pass('never reached');
t.pass('never reached either');
