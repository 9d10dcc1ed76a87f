// The console-error fixture: every test that uses this `test` fails when
// the page logs an unexpected `console.error` or throws an uncaught error
// (`pageerror`). A page that is visibly broken must never prove a claim.
//
// A test that expects some error lists it in `allowedConsoleErrors`:
//   test.use({ allowedConsoleErrors: [/favicon/] });
'use strict';
const base = require('@playwright/test');

const test = base.test.extend({
  allowedConsoleErrors: [[], { option: true }],
  failOnConsoleError: [
    async ({ page, allowedConsoleErrors }, use) => {
      const seen = [];
      page.on('console', (message) => {
        if (message.type() === 'error') {
          seen.push(`console.error: ${message.text()}`);
        }
      });
      page.on('pageerror', (error) => {
        seen.push(`pageerror: ${error.message}`);
      });
      await use(seen);
      const unexpected = seen.filter(
        (text) => !allowedConsoleErrors.some((allowed) => allowed.test(text)),
      );
      base.expect(unexpected, 'the page logged unexpected errors').toEqual([]);
    },
    { auto: true },
  ],
});

module.exports = { test, expect: base.expect };
