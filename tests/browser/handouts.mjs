// Handouts from the built book, under `book/handouts/a4/` (or
// `book/handouts/letter/` with `--letter`, so that both sizes can be kept):
// - one print-ready PDF per chapter and `book.pdf` of the whole book, with
//   the exercises' solutions open (theme/print.js), figures as vectors sized
//   as on screen (at most the text width) with their captions, and no
//   browser header or footer;
// - the figure pack for teachers, `figures/<chapter>.pdf` (and the `.html`
//   it is printed from): each figure of the chapter at full page width, its
//   caption (its math rendered by KaTeX), the page and section it belongs
//   to, and the listing that drew it: its name from figures/fingerprints.txt
//   and its code from the page's `div.listing[data-listing=NAME]` blocks.
// It fails, after writing them all, when a figure does not load, a figure
// has no code in its pack, a pack's caption shows raw TeX (`_{`, `^{`, `$`),
// or a page of a chapter's PDF or of book.pdf (its last aside) ends too
// empty (tests/browser/blank-pages.mjs): more than 70 % empty, or more than
// 15 % with the next page starting with code. Pages more than 40 % empty
// are listed.
//
// Usage: node tests/browser/handouts.mjs [HTML_DIR] [--letter]
// (HTML_DIR defaults to book/html; the PDFs go next to it, in ../handouts)
// Chromium as for check.mjs: /usr/bin/chromium or $CHROMIUM; pdftoppm from
// poppler-utils.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { emptyPages, havePdftoppm } from "./blank-pages.mjs";

const args = process.argv.slice(2);
const format = args.includes("--letter") ? "Letter" : "A4";
const book = path.resolve(args.find((a) => !a.startsWith("--")) ?? "book/html");
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
for (const [what, file] of [["Chromium", executablePath],
  ["a built book", path.join(book, "print.html")]]) {
  if (!fs.existsSync(file)) {
    console.error(`handouts: no ${what} at ${file}`);
    process.exit(2);
  }
}
if (!havePdftoppm()) {
  console.error("handouts: no pdftoppm, to measure the pages' blank space: " +
    "apt-get install poppler-utils");
  process.exit(2);
}
const out = path.join(book, "..", "handouts", format.toLowerCase());
const packDir = path.join(out, "figures");
fs.mkdirSync(packDir, { recursive: true });
const margin = { top: "18mm", bottom: "18mm", left: "16mm", right: "16mm" };

// Which listing wrote each figure: `name fingerprint file@hash…` lines.
const drawnBy = new Map();
const manifest = path.join(book, "figures", "fingerprints.txt");
for (const line of fs.readFileSync(manifest, "utf8").split("\n")) {
  const [name, , ...files] = line.split(" ");
  for (const file of files) drawnBy.set(file.split("@")[0], name);
}

const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking"],
});
const page = await browser.newPage();
// A figure that does not load would print as a blank space: fail instead.
const failed = [];
page.on("requestfailed",
  (r) => failed.push(`failed to load ${r.url()}: ${r.failure()?.errorText}`));
// mdBook's print.html calls window.print() when it loads, which would race
// with page.pdf ("Page is already being printed"): disable it in every
// document before the page's own scripts run.
await page.addInitScript(() => {
  window.print = () => {};
});
// The chapters in reading order, from the sidebar of the first page.
await page.goto(pathToFileURL(path.join(book, "index.html")).href);
const chapters = await page.evaluate(() => [
  ...new Set([...document.querySelectorAll("#mdbook-sidebar a[href$='.html'], .sidebar a[href$='.html']")]
    .map((a) => a.getAttribute("href").split("#")[0])),
]);

async function open(url) {
  await page.goto(url, { waitUntil: "load" });
  await page.emulateMedia({ media: "print" });
  await page.evaluate(() => window.dispatchEvent(new Event("beforeprint")));
  // Figures in the solutions just opened load now: wait until each
  // <object> has its document (a frame; file:// hides its content).
  const wanted = await page.evaluate(() => document.querySelectorAll("object").length);
  // (generous: a slow machine's first print.html, 40 figures, took over 15 s)
  const deadline = Date.now() + 60000;
  const frames = () => page.frames().filter((f) => f.url().endsWith(".svg"));
  // (an <object> starts loading at layout, so each turn asks for one)
  while (frames().length < wanted && Date.now() < deadline) {
    await page.evaluate(() => document.body.getBoundingClientRect());
    await page.waitForTimeout(50);
  }
  await Promise.all(frames().map((f) => f.waitForLoadState("load")));
  if (frames().length < wanted) {
    const loaded = new Set(frames().map((f) => path.basename(new URL(f.url()).pathname)));
    const missing = (await page.evaluate(() =>
      [...document.querySelectorAll("object")].map((o) => o.getAttribute("data"))))
      .filter((data) => !loaded.has(path.basename(data)));
    failed.push(`${url}: ${frames().length} of ${wanted} figures loaded; not: ${missing.join(", ")}`);
  }
}

async function pdf(url, target) {
  await open(url);
  await page.pdf({ path: target, format, printBackground: true, margin });
}

// A chapter's PDF (or the book's): note its pages more than 40 % empty,
// and fail on those too empty (see blank-pages.mjs).
function checkBlankPages(target) {
  for (const p of emptyPages(target, path.basename(target), parseFloat(margin.top))) {
    if (p.tooEmpty) failed.push(`page too empty: ${p.text}`);
    else console.log(`handouts: note: ${p.text}`);
  }
}

// Each figure of the open page: its SVG, caption (as HTML, with KaTeX's
// math), the nearest heading before it, and the listing that drew it (from
// `drawnBy`, the manifest: SVG file name → listing name) with its code, all
// the page's `div.listing[data-listing=NAME]` blocks.
function figuresOfPage(drawnBy) {
  const before = (el, selector) => [...document.querySelectorAll(selector)]
    .filter((c) => c.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)
    .pop();
  const code = (listing) => [...document.querySelectorAll(
    `div.listing[data-listing="${CSS.escape(listing)}"] pre`)]
    .map((pre) => (pre.querySelector("code") ?? pre).innerText.replace(/\n+$/, ""))
    .join("\n\n");
  return [...document.querySelectorAll("main figure.figure")].map((f) => {
    const svg = f.querySelector("object").getAttribute("data");
    const listing = drawnBy[svg.split("/").pop()] ?? "";
    return {
      svg,
      listing,
      ratio: f.querySelector("object").style.aspectRatio,
      caption: f.querySelector("figcaption").innerHTML,
      section: before(f, "main h2, main h3")?.textContent ?? "",
      code: listing ? code(listing) : "",
    };
  });
}

// Captions of the open pack that show raw TeX outside KaTeX's math.
function rawTexInCaptions() {
  return [...document.querySelectorAll(".caption")].flatMap((caption) => {
    const copy = caption.cloneNode(true);
    copy.querySelectorAll(".katex").forEach((k) => k.remove());
    const text = copy.textContent.replace(/\s+/g, " ").trim();
    const at = text.search(/_\{|\^\{|\$/);
    return at < 0 ? [] : [`…${text.slice(Math.max(0, at - 30), at + 30)}…`];
  });
}

const escape = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;")
  .replace(/>/g, "&gt;").replace(/"/g, "&quot;");

// KaTeX's stylesheet as theme/head.hbs links it, from the packs' folder.
const katexCss = path.relative(packDir, path.join(book, "katex", "katex.min.css"));

function packHtml(title, chapter, figures) {
  const items = figures.map((f, i) => {
    const listing = f.listing || "(not in the manifest)";
    const svg = path.relative(packDir, path.join(book, f.svg));
    return `<section>
<h2>Figure ${i + 1}: ${escape(f.section)}</h2>
<object data="${escape(svg)}" type="image/svg+xml"
  style="aspect-ratio: ${escape(f.ratio)}"></object>
<p class="caption">${f.caption}</p>
<p class="source">From the page “${escape(title)}” (${escape(chapter)}),
drawn by the listing <code>${escape(listing)}</code>:</p>
<pre>${escape(f.code)}</pre>
</section>`;
  });
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Figures: ${escape(title)}</title>
<link rel="stylesheet" href="${escape(katexCss)}">
<style>
body { font-family: sans-serif; margin: 0; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.1em; margin: 0 0 0.5em; break-after: avoid; }
section { break-before: page; }
section:first-of-type { break-before: avoid; }
object { display: block; width: 100%; }
.caption { font-style: italic; }
pre { font-size: 8pt; white-space: pre; break-inside: auto; }
</style></head><body>
<h1>${escape(title)}: the figures</h1>
${items.join("\n")}
</body></html>`;
}

let packs = 0;
for (const chapter of chapters) {
  const url = pathToFileURL(path.join(book, chapter)).href;
  const target = path.join(out, chapter.replace(/\.html$/, ".pdf"));
  await pdf(url, target);
  checkBlankPages(target);
  const figures = await page.evaluate(figuresOfPage, Object.fromEntries(drawnBy));
  for (const f of figures.filter((f) => !f.code.trim())) {
    failed.push(`no code for ${f.svg} in its pack (${chapter}): ` + (f.listing
      ? `no div.listing[data-listing="${f.listing}"] pre on the page`
      : "not in figures/fingerprints.txt"));
  }
  if (figures.length > 0) {
    const title = await page.evaluate(
      () => document.querySelector("main h1")?.textContent ?? document.title);
    const html = path.join(packDir, chapter);
    fs.writeFileSync(html, packHtml(title, chapter, figures));
    await pdf(pathToFileURL(html).href, html.replace(/\.html$/, ".pdf"));
    for (const raw of await page.evaluate(rawTexInCaptions)) {
      failed.push(`raw TeX in a caption of figures/${chapter}: ${raw}`);
    }
    packs += 1;
  }
  console.log(`handouts: ${chapter} (${figures.length} figures)`);
}
const whole = path.join(out, "book.pdf");
await pdf(pathToFileURL(path.join(book, "print.html")).href, whole);
checkBlankPages(whole);
await browser.close();
if (failed.length > 0) {
  console.error(`handouts: ${failed.length} problem(s):\n${failed.join("\n")}`);
  process.exit(1);
}
console.log(`handouts: ${chapters.length} chapters and book.pdf in ${out}; ` +
  `${packs} figure packs in ${packDir}`);
