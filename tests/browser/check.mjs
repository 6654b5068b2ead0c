// The book as a reader's browser shows it: serves the built book (default
// `book/html/`) on 127.0.0.1, opens every page in headless Chromium and fails,
// naming the page and the element, when
// - a figure (an <object>, so that its hover titles show) did not load, has
//   no size, no caption, or text under 9 px as shown; an image likewise;
// - two texts of a figure overlap or stand under 1 px apart as shown; a mark
//   or text of a figure is cut by its edge, or cut in part by a clip-path;
//   a text runs out of the box it is written in;
// - the figures' font (DejaVu Sans, the widest they name; Debian's
//   `fonts-dejavu-core`) is not installed, so the layout would be checked
//   in a narrower one;
// - TeX shows raw (`_{`, `^{`, `$`) in the page's text outside code and math,
//   captions included, or in a figure; Markdown emphasis shows its marks;
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
import path from "node:path";
import { launch, serve, watchedPage } from "./serve.mjs";

const book = path.resolve(process.argv[2] ?? "book/html");
const src = path.resolve(process.argv[3] ?? "src");
const shots = path.resolve("target/browser");
if (!fs.existsSync(path.join(book, "index.html"))) {
  console.error(`browser test: no built book in ${book}: run mdbook build`);
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });

// The edition: the Chinese one is searched for its own terms.
const zh = /<html lang="zh/.test(fs.readFileSync(path.join(book, "index.html"), "utf8"));

// Markdown emphasis that did not render (its `*`, `**` or `_` shows), as
// happens next to Chinese characters: in the page's text outside code and
// math.
function rawEmphasis() {
  const found = [];
  const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest("pre, code, .katex, script, style")) continue;
    const m = node.data.match(/\*\*|[\u4e00-\u9fff][*_]|[*_][\u4e00-\u9fff]/);
    if (m) found.push(`markup shows: …${node.data.slice(Math.max(0, m.index - 20), m.index + 20)}…`);
  }
  return found;
}

// A term from each chapter that the search box must find there.
const SEARCH = zh ? {
  "queries-keys-values": "自主性提示",
  "nadaraya-watson": "Nadaraya",
  "attention-scoring-functions": "双线性",
  "bahdanau-attention": "Bahdanau",
  "multihead-attention": "transpose_qkv",
  "self-attention-positional-encoding": "正弦",
  "transformer": "AddNorm",
  "performance": "GEMM",
  "glossary": "缩放定律",
} : {
  "queries-keys-values": "volitional",
  "nadaraya-watson": "Nadaraya",
  "attention-scoring-functions": "bilinear",
  "bahdanau-attention": "Bahdanau",
  "multihead-attention": "transpose_qkv",
  "self-attention-positional-encoding": "sinusoidal",
  "transformer": "AddNorm",
  "performance": "GEMM",
};

const { base, server } = await serve(book);

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

// The figures as displayed (each <object>'s document measures in displayed
// px): texts that overlap or stand under 1 px apart; a mark or text cut by
// the SVG's edge, or cut in part (not hidden whole) by its clip-path's rect.
// What a reader cannot see is skipped: hover targets (in <g opacity="0">),
// hidden or empty elements.
function figureLayout() {
  const hidden = (el) => el.closest('[opacity="0"], clipPath, defs') ||
    getComputedStyle(el).visibility === "hidden" ||
    empty(el.getBoundingClientRect()) ||
    (el.tagName === "text" && !el.textContent.trim());
  const empty = (b) => b.right - b.left === 0 && b.bottom - b.top === 0;
  const bounds = (points) => {
    const xs = points.map((p) => p.x);
    const ys = points.map((p) => p.y);
    return { left: Math.min(...xs), right: Math.max(...xs),
      top: Math.min(...ys), bottom: Math.max(...ys) };
  };
  const corners = (b) => [{ x: b.left, y: b.top }, { x: b.right, y: b.bottom }];
  // A rect in an element's user space, as displayed.
  const shown = (el, x, y, width, height) => {
    const m = el.getScreenCTM();
    return bounds([[x, y], [x + width, y], [x, y + height], [x + width, y + height]]
      .map(([px, py]) => new DOMPoint(px, py).matrixTransform(m)));
  };
  // A text's glyphs, a box a character, turned as the text is: along the
  // text, the character's advance (side bearings included: letters closer
  // than that run together); across, its ink from the baseline (a canvas
  // measures it at 1000 px in the text's font), not the font's line box,
  // which makes stacked tick labels, or turned ones side by side, seem to
  // touch. A tspan's smaller characters scale with their cell's height.
  const ctx = document.createElement("canvas").getContext("2d");
  const glyphs = (text) => {
    const style = getComputedStyle(text);
    ctx.font = `${style.fontStyle} ${style.fontWeight} 1000px ${style.fontFamily}`;
    const chars = text.textContent.replace(/\s+/g, " ").trim().split("");
    const count = text.getNumberOfChars();
    const whole = ctx.measureText(chars.join(""));
    const sizePerHeight = parseFloat(style.fontSize) / text.getExtentOfChar(0).height;
    return [...Array(count).keys()].filter((i) => chars[i] !== " ").map((i) => {
      const cell = text.getExtentOfChar(i);
      const em = (cell.height * sizePerHeight) / 1000;
      // (each character's own ink, unless the characters do not match)
      const m = chars.length === count ? ctx.measureText(chars[i]) : whole;
      const top = text.getStartPositionOfChar(i).y - m.actualBoundingBoxAscent * em;
      return shown(text, cell.x, top, cell.width,
        (m.actualBoundingBoxAscent + m.actualBoundingBoxDescent) * em);
    });
  };
  const around = (boxes) => bounds(boxes.flatMap(corners));
  const box = (el) =>
    (el.tagName === "text" ? around(glyphs(el)) : el.getBoundingClientRect());
  // How far box b reaches out of frame f (0 when inside).
  const out = (b, f) => Math.max(f.left - b.left, b.right - f.right,
    f.top - b.top, b.bottom - f.bottom, 0);
  const gap = (a, b) => Math.max(a.left - b.right, b.left - a.right,
    a.top - b.bottom, b.top - a.bottom);
  const words = (el) => (el.tagName === "text" ? el.textContent
    : el.querySelector("title")?.textContent ?? "").trim().replace(/\s+/g, " ");
  const label = (el) =>
    `<${el.tagName}>${words(el) ? ` "${words(el).slice(0, 40)}"` : ""}`;

  const overlaps = (svg) => {
    const texts = [...svg.querySelectorAll("text")].filter((t) => !hidden(t))
      .map((t) => ({ t, glyphs: glyphs(t) }))
      .map((a) => ({ ...a, b: around(a.glyphs) }));
    const close = (a, c) => gap(a.b, c.b) < 1 &&
      a.glyphs.some((g) => c.glyphs.some((h) => gap(g, h) < 1));
    return texts.flatMap((a, i) => texts.slice(i + 1)
      .filter((c) => close(a, c))
      .map((c) => `"${words(a.t)}" and "${words(c.t)}"`));
  };
  const marks = "text, circle, ellipse, rect, line, polyline, polygon, path";
  // (a rect that covers the whole figure is its background)
  const background = (el, b, frame) => el.tagName === "rect" && out(frame, b) === 0;
  const cutByEdge = (svg) => {
    const frame = svg.getBoundingClientRect();
    return [...svg.querySelectorAll(marks)].filter((el) => !hidden(el))
      .map((el) => ({ el, b: box(el) }))
      .filter(({ el, b }) => out(b, frame) >= 0.5 && !background(el, b, frame))
      .map(({ el, b }) => `${label(el)} by ${out(b, frame).toFixed(1)} px`);
  };
  const cutByClip = (svg) => [...svg.querySelectorAll("[clip-path]")].flatMap((group) => {
    const id = group.getAttribute("clip-path").match(/url\(#(.+)\)/)?.[1];
    const rect = id && svg.querySelector(`clipPath[id="${id}"] > rect`);
    if (!rect) return [];
    const clip = shown(group,
      ...["x", "y", "width", "height"].map((a) => rect[a].baseVal.value));
    // partly inside (gap < 0), partly out
    return [...group.querySelectorAll("text, circle, ellipse, rect")]
      .filter((el) => !hidden(el))
      .map((el) => ({ el, b: box(el) }))
      .filter(({ b }) => gap(b, clip) < 0 && out(b, clip) >= 0.5)
      .map(({ el, b }) => `${label(el)} by ${out(b, clip).toFixed(1)} px`);
  });
  // a text whose middle lies in a box (a drawn rect other than the
  // background) and that reaches out of it
  const outOfBox = (svg) => {
    const frame = svg.getBoundingClientRect();
    const boxes = [...svg.querySelectorAll("rect")].filter((el) => !hidden(el))
      .map((el) => ({ el, b: el.getBoundingClientRect() }))
      .filter(({ el, b }) => !background(el, b, frame));
    return [...svg.querySelectorAll("text")].filter((t) => !hidden(t))
      .map((t) => ({ t, b: around(glyphs(t)) }))
      .flatMap(({ t, b }) => {
        const x = (b.left + b.right) / 2;
        const y = (b.top + b.bottom) / 2;
        const container = boxes.find(({ b: r }) => r.left < x && x < r.right &&
          r.top < y && y < r.bottom && out(b, r) >= 0.5);
        return container ? [`${label(t)} by ${out(b, container.b).toFixed(1)} px`] : [];
      });
  };
  // the first few, each once (with how often it occurs)
  const first = (list) => {
    const counts = new Map();
    list.forEach((item) => counts.set(item, (counts.get(item) ?? 0) + 1));
    const items = [...counts].map(([item, n]) => (n > 1 ? `${item} (×${n})` : item));
    return items.slice(0, 5).join(", ") +
      (items.length > 5 ? ` and ${items.length - 5} more` : "");
  };

  const found = [];
  for (const object of document.querySelectorAll("main figure.figure object")) {
    const svg = object.contentDocument?.documentElement;
    if (svg?.tagName !== "svg") continue; // reported as not shown
    const name = object.getAttribute("data");
    for (const [what, list] of [["texts overlap or touch in", overlaps(svg)],
      ["cut by the edge of", cutByEdge(svg)],
      ["cut in part by the clip-path in", cutByClip(svg)],
      ["a text runs out of its box in", outOfBox(svg)]]) {
      if (list.length) found.push(`${what} ${name}: ${first(list)}`);
    }
  }
  return found;
}

// TeX left raw (`_{`, `^{`, `$`) in text that a reader sees: the page's
// text outside code and rendered math (.katex), captions included, and the
// figures' texts.
function rawTex() {
  const raw = /_\{|\^\{|\$/;
  const found = [];
  const main = document.querySelector("main");
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const parent = node.parentElement;
    if (!raw.test(node.textContent) ||
      parent.closest("pre, code, .katex, script, style") ||
      !parent.checkVisibility()) continue;
    const where = parent.closest("figure")?.querySelector("object")
      ?.getAttribute("data");
    const text = node.textContent.trim().replace(/\s+/g, " ");
    const at = Math.max(0, text.search(raw) - 30);
    found.push(`raw TeX in the ${where ? `caption of ${where}` : "text"}: ` +
      `…${text.slice(at, at + 60)}…`);
  }
  for (const object of main.querySelectorAll("figure.figure object")) {
    const svg = object.contentDocument?.documentElement;
    for (const text of svg?.querySelectorAll("text") ?? []) {
      if (raw.test(text.textContent) && !text.closest('[opacity="0"]')) {
        found.push(`raw TeX in ${object.getAttribute("data")}: ` +
          `"${text.textContent.trim()}"`);
      }
    }
  }
  return found;
}

const chapters = fs.readdirSync(src)
  .filter((f) => f.endsWith(".md") && f !== "SUMMARY.md")
  .map((f) => f.slice(0, -3));
const browser = await launch();
const context = await browser.newContext({
  viewport: { width: 1280, height: 900 },
});
const failures = [];
// The figures' font, installed? Its digits are 1303/2048 em wide (its
// `hmtx` table): ten take 636 px at 100 px, where the monospace fallback's
// take 602 (DejaVu Sans Mono) and Liberation Sans's 556.
const fontPage = await context.newPage();
const dejavu = await fontPage.evaluate(() => {
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = '100px "DejaVu Sans", monospace';
  return Math.abs(ctx.measureText("0123456789").width - 636.2) < 1;
});
await fontPage.close();
if (!dejavu) {
  failures.push("the figures' font DejaVu Sans is not installed (Debian: " +
    "apt-get install fonts-dejavu-core): their layout is checked in it");
}
for (const chapter of chapters) {
  const problems = [];
  const page = await watchedPage(context, base, problems);
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
  problems.push(...await page.evaluate(figureLayout));
  problems.push(...await page.evaluate(rawTex));
  problems.push(...await page.evaluate(rawEmphasis));
  const term = SEARCH[chapter];
  if (term) {
    await page.click("#mdbook-search-toggle");
    // The search runs on input, once its index has loaded: type, and type
    // again if nothing was listed
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
