// The book as a reader's browser shows it: serves the built book (default
// `book/html/`) on 127.0.0.1, opens every page in headless Chromium and fails,
// naming the page and the element, when
// - a figure (an <object>, so that its hover titles show) did not load, has
//   no size, no caption, or text under 9 px as shown; an image likewise;
// - a character of the page shows as an empty box: no loaded font has it;
// - a page whose source has math shows no KaTeX, a KaTeX error, or raw TeX;
// - a request leaves 127.0.0.1, a request fails, or the console logs an error;
// - a code block is wider than its column (it would scroll sideways);
// - an in-page `#fragment` link points nowhere;
// - the search box does not list a chapter for a term from it.
// Full-page screenshots go to `target/browser/`.
//
// Usage: node tests/browser/check.mjs [BOOK_DIR] [SRC_DIR]
// Chromium: /usr/bin/chromium (Debian's `apt-get install chromium`), or the
// path in $CHROMIUM.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { chromium } from "playwright-core";

const book = path.resolve(process.argv[2] ?? "book/html");
const src = path.resolve(process.argv[3] ?? "src");
const shots = path.resolve("target/browser");
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
if (!fs.existsSync(executablePath)) {
  console.error(`browser test: no Chromium at ${executablePath}: ` +
    "install it (apt-get install chromium) or set CHROMIUM");
  process.exit(2);
}
if (!fs.existsSync(path.join(book, "index.html"))) {
  console.error(`browser test: no built book in ${book}: run mdbook build`);
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });

// A term from each chapter that the search box must find there.
const SEARCH = {
  "queries-keys-values": "volitional",
  "nadaraya-watson": "Nadaraya",
  "attention-scoring-functions": "bilinear",
  "bahdanau-attention": "Bahdanau",
  "multihead-attention": "transpose_qkv",
  "self-attention-positional-encoding": "sinusoidal",
  "transformer": "AddNorm",
  "performance": "GEMM",
};

const TYPES = {
  ".html": "text/html", ".css": "text/css", ".js": "text/javascript",
  ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json",
  ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf",
};
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
const base = `http://127.0.0.1:${server.address().port}`;

// Characters of the page that no loaded font covers (they would show as
// empty boxes): each character, drawn in its element's font, is compared
// with characters that no font has.
async function missingGlyphs() {
  // the page's text and each figure's (KaTeX's hidden MathML aside)
  const roots = [document.querySelector("main"),
    ...[...document.querySelectorAll("main object")]
      .map((o) => o.contentDocument?.documentElement).filter(Boolean)];
  const byFont = new Map();
  for (const root of roots) {
    const walker = root.ownerDocument.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (node.parentElement.closest(".katex-mathml, title, style, script")) continue;
      const style = getComputedStyle(node.parentElement);
      const font = `32px ${style.fontFamily}`;
      const chars = byFont.get(font) ?? new Set();
      for (const c of node.textContent) {
        if (c.codePointAt(0) > 0x7e && c.trim()) chars.add(c);
      }
      byFont.set(font, chars);
    }
  }
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 48;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const draw = (font, c) => {
    ctx.clearRect(0, 0, 48, 48);
    ctx.font = font;
    ctx.fillText(c, 4, 36);
    return ctx.getImageData(0, 0, 48, 48).data.join();
  };
  const found = [];
  for (const [font, chars] of byFont) {
    if (chars.size === 0) continue;
    await document.fonts.load(font, [...chars].join(""));
    const none = ["\u{10FFFD}", "\u0378"].map((c) => draw(font, c));
    const missing = [...chars].filter((c) => none.includes(draw(font, c)));
    if (missing.length) {
      found.push(`no font has ${missing.join("")} (in ${font.slice(5, 40)})`);
    }
  }
  return found;
}

const chapters = fs.readdirSync(src)
  .filter((f) => f.endsWith(".md") && f !== "SUMMARY.md")
  .map((f) => f.slice(0, -3));
const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking"],
});
const context = await browser.newContext({
  viewport: { width: 1280, height: 900 },
});
const failures = [];
for (const chapter of chapters) {
  const page = await context.newPage();
  const problems = [];
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
  await page.goto(`${base}/${chapter}.html`, { waitUntil: "load" });
  // Figures inside a closed solution load only once it is opened: open
  // them all, as print does, and wait for every <object> to have its SVG.
  await page.evaluate(() => document.querySelectorAll("details")
    .forEach((d) => { d.open = true; }));
  await page.waitForFunction(() => [...document.querySelectorAll("main object")]
    .every((o) => o.contentDocument?.documentElement?.tagName === "svg"),
  null, { timeout: 10000 }).catch(() => {});
  const source = fs.readFileSync(path.join(src, `${chapter}.md`), "utf8");
  const hasMath = /\$\$|\$[^$\s][^$]*\$/.test(source);
  problems.push(...await page.evaluate((hasMath) => {
    const found = [];
    const main = document.querySelector("main");
    for (const img of main.querySelectorAll("img")) {
      if (!img.complete || img.naturalWidth === 0 || img.width === 0) {
        found.push(`image not shown: ${img.getAttribute("src")}`);
      }
      if (!img.alt.trim()) {
        found.push(`image without a description: ${img.getAttribute("src")}`);
      }
    }
    // Figures are <object>s, so that their hover titles show.
    for (const figure of main.querySelectorAll("figure.figure")) {
      const object = figure.querySelector("object");
      const name = object?.getAttribute("data");
      const svg = object?.contentDocument?.documentElement;
      if (!svg || svg.tagName !== "svg" || object.clientWidth === 0) {
        found.push(`figure not shown: ${name}`);
        continue;
      }
      if (!figure.querySelector("figcaption")?.textContent.trim()) {
        found.push(`figure without a caption: ${name}`);
      }
      // text at least 9 px as shown (the print width is checked by
      // cargo test: attention-book's tests/pages.rs)
      const scale = object.clientWidth / svg.width.baseVal.value;
      for (const text of svg.querySelectorAll("text, tspan")) {
        const px = parseFloat(getComputedStyle(text).fontSize) * scale;
        if (px < 9) {
          found.push(`text of ${px.toFixed(1)} px in ${name}: ${text.textContent.trim()}`);
          break;
        }
      }
    }
    const error = main.querySelector(".katex-error");
    if (error) found.push(`KaTeX error: ${error.textContent.slice(0, 60)}`);
    if (hasMath && !main.querySelector(".katex")) found.push("no KaTeX");
    const text = main.innerText;
    for (const raw of ["$$", "\\frac", "\\mathbf", "\\sum"]) {
      if (text.includes(raw)) found.push(`raw TeX in the text: ${raw}`);
    }
    for (const pre of main.querySelectorAll("pre")) {
      // mdBook scrolls the <code> inside the <pre>
      const box = pre.querySelector("code") ?? pre;
      if (box.scrollWidth > box.clientWidth + 1) {
        const line = pre.textContent.split("\n")
          .reduce((a, b) => (b.length > a.length ? b : a), "");
        found.push(`code wider than its column: ${line.trim().slice(0, 70)}`);
      }
    }
    for (const a of main.querySelectorAll('a[href^="#"]')) {
      const id = decodeURIComponent(a.getAttribute("href").slice(1));
      if (id && !document.getElementById(id)) {
        found.push(`link to a missing #${id}`);
      }
    }
    return found;
  }, hasMath));
  problems.push(...await page.evaluate(missingGlyphs));
  const term = SEARCH[chapter];
  if (term) {
    await page.click("#mdbook-search-toggle");
    // mdBook searches on keyup, once its index has loaded: type, and type
    // again if the index was not ready yet
    let listed = false;
    for (let attempt = 0; attempt < 5 && !listed; attempt++) {
      await page.fill("#mdbook-searchbar", "");
      await page.type("#mdbook-searchbar", term, { delay: 20 });
      listed = await page
        .waitForFunction(
          (name) => [...document.querySelectorAll("#mdbook-searchresults a")]
            .some((a) => a.getAttribute("href").startsWith(name)),
          `${chapter}.html`, { timeout: 3000 })
        .then(() => true, () => false);
    }
    if (!listed) problems.push(`searching "${term}" does not list the page`);
    await page.keyboard.press("Escape");
  }
  await page.screenshot({
    path: path.join(shots, `${chapter}.png`), fullPage: true,
  });
  for (const problem of problems) failures.push(`${chapter}: ${problem}`);
  console.log(`${chapter}: ${problems.length ? "FAILED" : "ok"}`);
  await page.close();
}
await browser.close();
server.close();
if (failures.length) {
  console.error(`\n${failures.length} problem(s):\n${failures.join("\n")}`);
  process.exit(1);
}
console.log(`${chapters.length} pages ok; screenshots in ${shots}`);
