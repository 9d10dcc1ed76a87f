// Fixture tests for proofgraph's report parser:
// pass (annotated claim + critical case), pass with screenshot attachment,
// skipped, failing, flaky (fails on first attempt, passes on retry),
// timed out, and an expected failure (test.fail).
const { test, expect } = require('@playwright/test');

const PAGE = `<!doctype html><html><body>
  <h1 id="title">Profile</h1>
  <form><input id="name" value="Ada"><button id="save" type="button"
    onclick="document.getElementById('status').textContent='Saved ' + document.getElementById('name').value">Save</button></form>
  <p id="status"></p>
</body></html>`;

test.describe('profile', () => {
  test(
    'updates the display name',
    {
      annotation: [
        { type: 'claim', description: 'profile-update' },
        { type: 'critical-case', description: 'CASE-1' },
      ],
    },
    async ({ page }) => {
      await page.setContent(PAGE);
      await page.fill('#name', 'Grace');
      await page.click('#save');
      await expect(page.locator('#status')).toHaveText('Saved Grace');
    },
  );

  test(
    'shows the profile page',
    { annotation: { type: 'claim', description: 'profile-update' } },
    async ({ page }, testInfo) => {
      await page.setContent(PAGE);
      await expect(page.locator('#title')).toHaveText('Profile');
      const shot = testInfo.outputPath('profile.png');
      await page.screenshot({ path: shot });
      await testInfo.attach('profile-screenshot', { path: shot, contentType: 'image/png' });
      await testInfo.attach('note', { body: 'inline text attachment', contentType: 'text/plain' });
    },
  );

  test('is skipped for now', async ({ page }) => {
    test.skip(true, 'not implemented yet');
    await page.setContent(PAGE);
  });

  test('fails on purpose', { annotation: { type: 'critical-case', description: 'CASE-2' } }, async ({ page }) => {
    await page.setContent(PAGE);
    await expect(page.locator('#title')).toHaveText('Settings', { timeout: 500 });
  });

  test('is flaky', async ({ page }, testInfo) => {
    await page.setContent(PAGE);
    // Fails on the first attempt, passes on the retry.
    expect(testInfo.retry).toBeGreaterThan(0);
  });

  test('times out', async ({ page }) => {
    test.setTimeout(1000);
    await page.setContent(PAGE);
    await page.waitForSelector('#never-appears');
  });

  test('is a known failure', async ({ page }) => {
    test.fail(true, 'bug 123: title is wrong');
    await page.setContent(PAGE);
    await expect(page.locator('#title')).toHaveText('Settings', { timeout: 200 });
  });
});
