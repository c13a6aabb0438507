// Lighthouse on several pages in one Node process and one Chromium (lighthouse.py's
// run_many): the CLI would start Node, load Lighthouse's configuration and launch
// Chromium again for each page, about 5 s of every run. Each page still gets a tab of
// its own with its origin's cache and storage cleared first (Lighthouse's default), as
// the CLI gives it.
//
// Usage: node lighthouse_batch.mjs SPEC.json, where SPEC holds {"chromePath": ...,
// "chromeFlags": [...], "settings": {...}, "jobs": [{"url": ..., "out": ...}, ...]};
// "settings" are Lighthouse's (lighthouse.py's SETTINGS, with the categories).
// Each job's JSON report is written to its "out"; a job that fails writes
// {"runtimeError": {"code": "BATCH", "message": ...}} there instead, and the rest run.
import fs from 'node:fs';
import * as chromeLauncher from 'chrome-launcher';
import lighthouse from 'lighthouse';

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const chrome = await chromeLauncher.launch({
  chromePath: spec.chromePath,
  chromeFlags: spec.chromeFlags,
});
try {
  for (const job of spec.jobs) {
    try {
      const result = await lighthouse(job.url, {
        ...spec.settings,
        port: chrome.port,
        logLevel: 'error',
      });
      fs.writeFileSync(job.out, result.report);
    } catch (err) {
      const message = String(err && err.stack ? err.stack : err);
      fs.writeFileSync(job.out, JSON.stringify({runtimeError: {code: 'BATCH', message}}));
    }
  }
} finally {
  await chrome.kill();
}
