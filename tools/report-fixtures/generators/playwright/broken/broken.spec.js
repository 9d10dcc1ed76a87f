// A spec file that throws while loading: Playwright reports it in the
// top-level "errors" array and collects no tests from it.
const { test } = require('@playwright/test');

throw new Error('spec failed to load on purpose');

test('never collected', async () => {});
