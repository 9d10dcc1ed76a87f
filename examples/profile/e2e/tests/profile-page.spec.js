'use strict';
// `test` from ./fixtures fails any test whose page logs an unexpected
// console.error or throws: a page that is visibly broken proves nothing.
const { test, expect } = require('./fixtures');

const claim = { type: 'claim', description: 'profile-page' };

test('the profile page shows the profile the API serves', { annotation: claim }, async ({ page }) => {
  await page.goto('/profile-page/1');
  await expect(page).toHaveTitle('Profile of Ada Lovelace');
  // The page's own script loaded the profile from GET /profile/1.
  await expect(page.getByRole('status')).toHaveText('Loaded #1 Ada Lovelace');
  // Accessibility: a landmark, one level-1 heading, a named link.
  await expect(page.getByRole('main')).toMatchAriaSnapshot(`
    - main:
      - heading "Ada Lovelace" [level=1]
      - status: "Loaded #1 Ada Lovelace"
      - paragraph:
        - link "This profile as JSON"
  `);
});

test.describe('an unknown profile', () => {
  // The browser logs the 404 of the page itself; that one is expected.
  test.use({ allowedConsoleErrors: [/status of 404/] });

  test('says it is not found', { annotation: claim }, async ({ page }) => {
    const answer = await page.goto('/profile-page/99');
    expect(answer?.status()).toBe(404);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Profile not found');
  });
});
