// Handouts: one print-ready PDF per chapter of the built book, and one of
// the whole book, under `book/handouts/` (A4; `--letter` for US Letter).
// Each PDF has the exercises' solutions open (theme/print.js), its figures
// at full width as vectors with their alt text as a caption, and no browser
// header or footer.
//
// Usage: node tests/browser/handouts.mjs [HTML_DIR] [--letter]
// (HTML_DIR defaults to book/html; the PDFs go next to it, in ../handouts)
// Chromium as for check.mjs: /usr/bin/chromium or $CHROMIUM.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

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
const out = path.join(book, "..", "handouts");
fs.mkdirSync(out, { recursive: true });

// The chapters in reading order, from the sidebar of the first page.
const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking"],
});
const page = await browser.newPage();
// mdBook's print.html calls window.print() when it loads, which would race
// with page.pdf ("Page is already being printed"): disable it in every
// document before the page's own scripts run.
await page.addInitScript(() => {
  window.print = () => {};
});
await page.goto(pathToFileURL(path.join(book, "index.html")).href);
const chapters = await page.evaluate(() => [
  ...new Set([...document.querySelectorAll("#mdbook-sidebar a[href$='.html'], .sidebar a[href$='.html']")]
    .map((a) => a.getAttribute("href").split("#")[0])),
]);

async function pdf(file, target) {
  await page.goto(pathToFileURL(path.join(book, file)).href,
    { waitUntil: "load" });
  await page.emulateMedia({ media: "print" });
  await page.evaluate(() => {
    window.dispatchEvent(new Event("beforeprint"));
    // each figure's alt text as a caption under it
    for (const img of document.querySelectorAll("main img[alt]")) {
      const caption = document.createElement("p");
      caption.textContent = img.alt;
      caption.style.cssText = "font-size: 0.85em; font-style: italic;";
      img.after(caption);
    }
  });
  await page.pdf({
    path: target, format, printBackground: true,
    margin: { top: "18mm", bottom: "18mm", left: "16mm", right: "16mm" },
  });
}

for (const chapter of chapters) {
  await pdf(chapter, path.join(out, chapter.replace(/\.html$/, ".pdf")));
  console.log(`handouts: ${chapter}`);
}
await pdf("print.html", path.join(out, "book.pdf"));
await browser.close();
console.log(`handouts: ${chapters.length} chapters and book.pdf in ${out}`);
