// The two editions side by side: the build folder (default `book/`,
// holding the English edition in `html/` and the Chinese in
// `zh-CN/html/`), served on 127.0.0.1. Fails when
// - a Chinese page does not show the same code blocks (their text) and
//   figures, in the same order, as its English page: only prose differs;
// - on the Chinese site, searching a term (注意力, 机制, 多头注意力, 位置编码,
//   掩蔽) does not list the chapter it belongs to, or the result does not
//   lead to that page with the term highlighted (a <mark>) in view;
// - on the English site, searching 机制 (inside 注意力机制, which mdBook's
//   own search cannot find) does not list the About page, or an English
//   term does not list its chapter;
// - a page's link to the other edition does not lead to the same page
//   there, and back;
// - a request fails or leaves 127.0.0.1, or the console logs an error.
//
// Usage: node tests/browser/editions.mjs [BUILD_DIR]

import fs from "node:fs";
import path from "node:path";
import { launch, serve, watchedPage } from "./serve.mjs";

const build = path.resolve(process.argv[2] ?? "book");
for (const site of ["html", "zh-CN/html"]) {
  if (!fs.existsSync(path.join(build, site, "index.html"))) {
    console.error(`editions test: no ${site}/ in ${build}: build both editions (see the README)`);
    process.exit(2);
  }
}

// (site, term, the page it must list and lead to)
const SEARCHES = [
  ["zh-CN/html", "注意力", "queries-keys-values"],
  ["zh-CN/html", "机制", "about"],
  ["zh-CN/html", "多头注意力", "multihead-attention"],
  ["zh-CN/html", "位置编码", "self-attention-positional-encoding"],
  ["zh-CN/html", "掩蔽", "attention-scoring-functions"],
  ["html", "机制", "about"],
  ["html", "positional encoding", "self-attention-positional-encoding"],
];

// The code blocks' text and the figures' files of a built page, in order.
function codeAndFigures(file) {
  const html = fs.readFileSync(file, "utf8");
  const main = html.slice(html.indexOf("<main>"), html.indexOf("</main>"));
  return [
    ...[...main.matchAll(/<pre[^>]*>([\s\S]*?)<\/pre>/g)].map((m) => `code: ${m[1]}`),
    ...[...main.matchAll(/<object data="([^"]+)"/g)].map((m) => `figure: ${m[1]}`),
  ];
}

const failures = [];
const pages = fs.readdirSync(path.join(build, "html"))
  .filter((f) => f.endsWith(".html") && !["print.html", "404.html", "toc.html"].includes(f));
for (const page of pages) {
  const en = codeAndFigures(path.join(build, "html", page));
  const zh = codeAndFigures(path.join(build, "zh-CN/html", page));
  const differ = en.findIndex((item, i) => zh[i] !== item);
  if (en.length !== zh.length || differ >= 0) {
    const i = differ >= 0 ? differ : Math.min(en.length, zh.length);
    failures.push(`${page}: the Chinese page's code and figures differ from the English ` +
      `(${zh.length} against ${en.length}; first at ${(en[i] ?? zh[i] ?? "").slice(0, 80)})`);
  }
}
console.log(`${pages.length} pages: code and figures ${failures.length ? "DIFFER" : "the same"} in both editions`);

const { base, server } = await serve(build);
const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });

async function check(site, term, chapter) {
  const problems = [];
  const page = await watchedPage(context, base, problems);
  await page.goto(`${base}/${site}/index.html`);
  await page.keyboard.press("s");
  await page.fill("#mdbook-searchbar", term);
  const link = page.locator(`#mdbook-searchresults a[href^="${chapter}.html"]`).first();
  const listed = await link.waitFor({ timeout: 5000 }).then(() => true, () => false);
  if (!listed) {
    problems.push(`"${term}" does not list ${chapter}.html`);
  } else {
    await link.click();
    await page.waitForURL(`**/${chapter}.html?search=*`);
    const marked = await page.waitForFunction((t) => {
      const marks = [...document.querySelectorAll("main mark")];
      const inView = marks.find((m) => {
        const box = m.getBoundingClientRect();
        return box.top >= 0 && box.bottom <= innerHeight;
      });
      const terms = t.split(/\s+/);
      return marks.length > 0 && inView !== undefined &&
        marks.every((m) => terms.includes(m.textContent.toLowerCase()));
    }, term.toLowerCase(), { timeout: 5000 }).then(() => true, () => false);
    if (!marked) problems.push(`${chapter}.html does not show "${term}" highlighted in view`);
  }
  await page.close();
  return problems;
}

async function checkSwitch(from, to, chapter) {
  const problems = [];
  const page = await watchedPage(context, base, problems);
  await page.goto(`${base}/${from}/${chapter}.html`);
  const link = page.locator(".language-switch");
  const shown = await link.waitFor({ timeout: 5000 }).then(() => true, () => false);
  if (!shown) {
    problems.push("no link to the other edition");
  } else {
    await link.click();
    await page.waitForLoadState("load");
    const expected = `${base}/${to}/${chapter}.html`;
    if (page.url() !== expected) problems.push(`leads to ${page.url()}, not ${expected}`);
  }
  await page.close();
  return problems;
}

for (const [site, term, chapter] of SEARCHES) {
  const problems = await check(site, term, chapter);
  failures.push(...problems.map((p) => `${site}: ${p}`));
  console.log(`${site}: search "${term}" → ${chapter}: ${problems.length ? "FAILED" : "ok"}`);
}
for (const [from, to] of [["html", "zh-CN/html"], ["zh-CN/html", "html"]]) {
  const problems = await checkSwitch(from, to, "nadaraya-watson");
  failures.push(...problems.map((p) => `${from}: language switch: ${p}`));
  console.log(`${from}: language switch: ${problems.length ? "FAILED" : "ok"}`);
}
await browser.close();
server.close();
if (failures.length) {
  console.error(`\n${failures.length} problem(s):\n${failures.join("\n")}`);
  process.exit(1);
}
