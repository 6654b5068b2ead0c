// What the browser tests share: the built book served on 127.0.0.1 (with
// `.wasm` as application/wasm, which browsers require of modules), headless
// Chromium launched as CI runs it, and a page that records its problems.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { chromium } from "playwright-core";

const TYPES = {
  ".html": "text/html", ".css": "text/css", ".js": "text/javascript",
  ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json",
  ".wasm": "application/wasm",
  ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf",
};

/** Serves the folder `book`; returns its base URL and the server. */
export async function serve(book) {
  const server = http.createServer((req, res) => {
    let file = decodeURIComponent(new URL(req.url, "http://x").pathname);
    if (file.endsWith("/")) file += "index.html";
    const full = path.join(book, file);
    if (!full.startsWith(book) || !fs.existsSync(full) ||
      fs.statSync(full).isDirectory()) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, {
      "content-type": TYPES[path.extname(full)] ?? "application/octet-stream",
    });
    fs.createReadStream(full).pipe(res);
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { base: `http://127.0.0.1:${server.address().port}`, server };
}

/** Debian's Chromium (or $CHROMIUM), headless, without background
 * networking; exits naming the package when there is none. */
export async function launch() {
  const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
  if (!fs.existsSync(executablePath)) {
    console.error(`browser test: no Chromium at ${executablePath}: ` +
      "install it (apt-get install chromium) or set CHROMIUM");
    process.exit(2);
  }
  return chromium.launch({
    executablePath,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run",
      "--disable-background-networking"],
  });
}

/** A new page of `context` that pushes onto `problems` every console
 * error, script error, failed request or HTTP error, and every request
 * that leaves `base` (which it aborts). */
export async function watchedPage(context, base, problems) {
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`script error: ${e.message}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  page.on("requestfailed", (r) => {
    if (r.url().startsWith(base)) {
      problems.push(`request failed: ${r.url()}: ${r.failure()?.errorText}`);
    }
  });
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(base)) return route.continue();
    problems.push(`request leaves 127.0.0.1: ${url}`);
    return route.abort();
  });
  return page;
}
