// Pages of a PDF that end mostly empty, from a 30 dpi greyscale rendering
// by poppler's pdftoppm. A page's emptiness is the share of its printable
// height (the page less its top and bottom margins) below its last row
// that is not white. A page (but a document's last) is too empty when
// - more than 70 % of it (BOUND) is empty: figures and captions are kept
//   whole (theme/print.css), so a page before a tall one may end up to 69 %
//   empty (transformer.pdf page 1, a heading and the 580 px architecture
//   diagram: 63 % in English; in Chinese, whose text is shorter, 66 %, and
//   69 % in book.pdf), but no more; or
// - more than 15 % of it is empty and the next page starts with a code
//   block (a band of its light grey): code breaks between lines, so it
//   could have started here. (A code block kept whole left
//   queries-keys-values.pdf page 3 43 % empty.)
//
// Usage: node tests/browser/blank-pages.mjs FILE.pdf… (margins of 18 mm)
// prints every page more than 40 % empty, and fails on those too empty.
// pdftoppm: `apt-get install poppler-utils`.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const DPI = 30;
const BOUND = 0.7;
const REPORTED = 0.4;
const BEFORE_CODE = 0.15;

// The pages of `pdf` as {width, height, pixels}, one byte per pixel.
function greyPages(pdf) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pages-"));
  try {
    execFileSync("pdftoppm", ["-gray", "-r", String(DPI), pdf, path.join(dir, "p")]);
    return fs.readdirSync(dir).sort().map((f) => {
      const data = fs.readFileSync(path.join(dir, f));
      // a binary PGM: "P5 width height maxval" and one byte a pixel
      const [header, width, height] = data.toString("latin1", 0, 40)
        .match(/^P5\s+(\d+)\s+(\d+)\s+\d+\s/);
      return { width: +width, height: +height, pixels: data.subarray(header.length) };
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const row = (page, y) => page.pixels.subarray(y * page.width, (y + 1) * page.width);
// A pixel darker than near-white (a code block's light grey counts).
const ink = (v) => v < 250;
// A code block's background (247 for mdBook's light theme).
const lightGrey = (v) => v >= 235 && v < 250;

// Each page of `pdf` with margins of `marginMm` at the top and bottom:
// {empty: its empty share (0 to 1), codeOnTop: its first inked row is
// mostly light grey, the top of a code block}.
export function pages(pdf, marginMm) {
  const margin = Math.round((marginMm / 25.4) * DPI);
  return greyPages(pdf).map((page) => {
    const bottom = page.height - margin;
    const rows = [...Array(page.height).keys()].filter((y) => row(page, y).some(ink));
    const last = Math.max(rows.at(-1) ?? margin, margin);
    const first = rows[0] ?? 0;
    return {
      empty: Math.min(1, Math.max(0, (bottom - last) / (bottom - margin))),
      codeOnTop: row(page, first).filter(lightGrey).length > page.width / 2,
    };
  });
}

// What is wrong with each page of `pdf` (named `name`): [{page, empty,
// tooEmpty, why}] for every page but the last more than 40 % empty, or too
// empty (see above).
export function emptyPages(pdf, name, marginMm) {
  const all = pages(pdf, marginMm);
  return all.slice(0, -1).map((p, i) => {
    const beforeCode = p.empty > BEFORE_CODE && all[i + 1].codeOnTop;
    const tooEmpty = p.empty > BOUND || beforeCode;
    const percent = `${Math.round(p.empty * 100)} % empty`;
    return {
      tooEmpty,
      shown: tooEmpty || p.empty > REPORTED,
      text: `${name} page ${i + 1}: ${percent}` +
        (beforeCode ? ", and the next page starts with code" : ""),
    };
  }).filter((p) => p.shown);
}

// Whether pdftoppm runs.
export function havePdftoppm() {
  try {
    execFileSync("pdftoppm", ["-v"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (!havePdftoppm()) {
    console.error("blank-pages: no pdftoppm: apt-get install poppler-utils");
    process.exit(2);
  }
  let failed = false;
  for (const pdf of process.argv.slice(2)) {
    for (const p of emptyPages(pdf, path.basename(pdf), 18)) {
      console.log(`${p.text}${p.tooEmpty ? " (too empty)" : ""}`);
      failed ||= p.tooEmpty;
    }
  }
  process.exit(failed ? 1 : 0);
}
