// Jest config used only to produce the CTRF fixture (jest-ctrf-json-reporter).
module.exports = {
  testEnvironment: 'node',
  reporters: [
    'default',
    ['jest-ctrf-json-reporter', { outputFile: 'jest-ctrf.json', outputDir: process.env.CTRF_OUT_DIR || 'ctrf' }],
  ],
};
