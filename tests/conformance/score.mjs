// Scores one conformance run against its requirement set and the
// expected-failures list (tests/conformance/run.sh calls it).
//
//   node score.mjs REQUIREMENTS_YAML RESULTS_DIR SET EXPECTED_FAILURES
//
// A scored scenario fails when any of its checks is FAILURE (the suite's
// own rule; WARNING, SKIPPED and INFO do not fail it) or when it left no
// results. Prints one line per scored scenario:
//   PASS | FAIL | XFAIL (listed, fails: expected) | XPASS (listed, passes: an error)
// and then "<SET>: P passed, X expected failures, F failed of N scored".
// Exit status 1 when F > 0.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [yamlPath, resultsDir, set, expectedPath] = process.argv.slice(2);

/** The `server:` list of a requirements file (a plain YAML list). */
function scored(path) {
  const out = [];
  let inServer = false;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (/^server:\s*$/.test(line)) { inServer = true; continue; }
    if (inServer && /^\S/.test(line)) break;
    const m = inServer && line.match(/^\s+-\s+([\w.-]+)/);
    if (m) out.push(m[1]);
  }
  return out;
}

/** `<set> <scenario> issue <N>: ...` lines for this set. */
function expected(path, wanted) {
  const map = new Map();
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^(\S+)\s+(\S+)\s+(issue \d+.*)$/);
    if (!m) { console.log(`BAD expected-failures line (needs "<set> <scenario> issue <N>: ..."): ${line}`); process.exitCode = 1; continue; }
    if (m[1] === wanted) map.set(m[2], m[3]);
  }
  return map;
}

/** scenario -> worst status over its checks, from RESULTS_DIR/server-<name>-<time>/checks.json */
function results(dir) {
  const out = new Map();
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir)) {
    const m = entry.match(/^server-(.+)-\d{4}-\d\d-\d\dT/);
    if (!m) continue;
    const checks = JSON.parse(readFileSync(join(dir, entry, 'checks.json'), 'utf8'));
    const failures = checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`);
    out.set(m[1], failures);
  }
  return out;
}

const names = scored(yamlPath);
const xfail = expected(expectedPath, set);
const got = results(resultsDir);
let pass = 0, expectedFail = 0, fail = 0;
for (const name of names) {
  const failures = got.get(name);
  const failed = failures === undefined || failures.length > 0;
  const why = failures === undefined ? 'no results' : failures.slice(0, 3).join(' | ');
  if (!failed && !xfail.has(name)) { pass++; console.log(`PASS  ${set} ${name}`); }
  else if (failed && xfail.has(name)) { expectedFail++; console.log(`XFAIL ${set} ${name} (${xfail.get(name)})`); }
  else if (failed) { fail++; console.log(`FAIL  ${set} ${name}: ${why}`); }
  else { fail++; console.log(`XPASS ${set} ${name}: listed in expected-failures.txt but passes; remove it from the list`); }
}
for (const name of xfail.keys())
  if (!names.includes(name)) { fail++; console.log(`STALE ${set} ${name}: listed in expected-failures.txt but not a scored scenario`); }
console.log(`${set}: ${pass} passed, ${expectedFail} expected failures, ${fail} failed of ${names.length} scored`);
if (fail > 0) process.exitCode = 1;
