// Drives Debian's Chromium (/usr/bin/chromium); never downloads a browser.
const { defineConfig } = require('@playwright/test');

module.exports = defineConfig({
  testDir: process.env.PW_TEST_DIR || './tests',
  outputDir: process.env.PW_OUTPUT_DIR || './test-results',
  workers: 1,
  retries: 1,
  reporter: [['json']],
  use: {
    browserName: 'chromium',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--headless=new',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
