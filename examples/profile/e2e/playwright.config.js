// Browser tests of the profile page. Playwright drives the system's Chromium
// (Debian: `apt-get install chromium`); no browser is ever downloaded.
// proofgraph runs `npx playwright test` and adds `--reporter=json` and
// `--project=chromium` itself; run by hand, the list reporter is used.
'use strict';
const { defineConfig } = require('@playwright/test');

module.exports = defineConfig({
  testDir: './tests',
  forbidOnly: true,
  retries: 0,
  workers: 1,
  timeout: 20_000,
  reporter: 'list',
  use: {
    // The `api` service of the change (see its execution.yaml).
    baseURL: process.env.BASE_URL || 'http://127.0.0.1:4180',
    trace: 'off',
    screenshot: 'only-on-failure',
  },
  projects: [
    {
      name: 'chromium',
      use: {
        browserName: 'chromium',
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
          args: [
            '--no-sandbox', // proofgraph's runs may be root; its namespaces are the sandbox
            '--headless=new',
            '--disable-gpu',
            '--disable-dev-shm-usage',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
          ],
        },
      },
    },
  ],
});
