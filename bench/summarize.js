#!/usr/bin/env node
// Pools hyperfine JSON exports (one per round) by command name and prints
// each command's median, min and max over every timed run, then the ratio of
// each proofgraph variant to the peer (of medians, and of minima), per round
// and pooled, and whether the pooled ratio of medians meets the target.
//
//   node bench/summarize.js TARGET PEER_NAME VARIANT_NAME... -- ROUND.json...
//
// The first variant is the headline; the others are reported beside it.
"use strict";
const fs = require("fs");

const argv = process.argv.slice(2);
const sep = argv.indexOf("--");
if (sep < 3) {
  console.error("usage: summarize.js TARGET PEER VARIANT... -- FILE.json...");
  process.exit(2);
}
const target = Number(argv[0]);
const [peer, ...variants] = argv.slice(1, sep);
const files = argv.slice(sep + 1);
const rounds = files.map((f) => JSON.parse(fs.readFileSync(f, "utf8")).results);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stats = (times) => ({
  median: median(times),
  min: Math.min(...times),
  max: Math.max(...times),
  n: times.length,
});
const timesOf = (results, name) => {
  const r = results.find((x) => x.command === name);
  if (!r) throw new Error(`no results for "${name}"`);
  return r.times;
};
const pooled = (name) => stats(rounds.flatMap((r) => timesOf(r, name)));
const ms = (s) => `${(s * 1000).toFixed(1).padStart(8)} ms`;
const width = Math.max(...[peer, ...variants].map((n) => n.length)) + 2;

console.log(`pooled over ${rounds.length} round(s):`);
for (const name of [...variants, peer]) {
  const s = pooled(name);
  console.log(`  ${name.padEnd(width)} median ${ms(s.median)}   min ${ms(s.min)}   max ${ms(s.max)}   (n=${s.n})`);
}
const p = pooled(peer);
variants.forEach((name, i) => {
  const v = pooled(name);
  const perRound = rounds
    .map((r) => (median(timesOf(r, name)) / median(timesOf(r, peer))).toFixed(3))
    .join(", ");
  const ratio = v.median / p.median;
  const verdict = ratio <= target ? "MET" : "MISSED";
  console.log(
    `${i === 0 ? "RATIO" : "ratio"} ${name} / ${peer}: ${ratio.toFixed(3)}x of medians ` +
      `(${(v.min / p.min).toFixed(3)}x of minima; per round ${perRound}); target <= ${target}x: ${verdict}`
  );
});
