// A suite that fails before any test is collected (runner error, no tests).
throw new Error('module failed to load on purpose');
