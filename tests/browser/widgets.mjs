// The book's widgets as a reader uses them: serves the built book (default
// `book/html/`) on 127.0.0.1, with `.wasm` as application/wasm, opens each
// page that has a widget in headless Chromium, opens the widget and drives
// it. Fails, naming the widget and the input, when
// - a widget is not shown, its module does not load, a request leaves
//   127.0.0.1 or fails, or the console logs an error;
// - opening a translation widget does not translate its example sentence;
// - a translation of the chapters' example sentences (and of a sentence
//   with unknown words) differs from the native library's on the same
//   committed models (tests/browser/widgets-reference.json, which
//   `cargo test -p d2l-attention --test widgets` checks against the
//   library): text, tokens and unknown words exactly, weights within 1e-4;
// - the bandwidth slider at the chapter's four σ shows other test MSEs;
// - a bad input (empty, 500 words, a kernel too narrow, and through the
//   module the inputs the form cannot make) gets no message, or another
//   (the forms' messages in the page's language: the Chinese edition's
//   are in ZH below);
// - the positional encoding's figures are not redrawn for a new width;
// - a widget shows without JavaScript or in print.
// Prints the module's load time and the time of each step (measured in the
// page, module loaded: the computation and the figures in the page, up to
// the next frame), and the module's size; screenshots of each
// opened widget go to `target/browser/widget-*.png`.
//
// Usage: node tests/browser/widgets.mjs [BOOK_DIR | URL]

import fs from "node:fs";
import path from "node:path";
import { launch, serve, watchedPage } from "./serve.mjs";

// A URL instead of a folder drives a book served elsewhere (`mdbook serve`).
const served = process.argv[2]?.startsWith("http") ? process.argv[2] : null;
const book = path.resolve(served ? "book/html" : process.argv[2] ?? "book/html");
const here = path.dirname(new URL(import.meta.url).pathname);
const reference = JSON.parse(
  fs.readFileSync(path.join(here, "widgets-reference.json"), "utf8"));
const shots = path.resolve("target/browser");
if (!fs.existsSync(path.join(book, "widgets/pkg/attention_widgets_bg.wasm"))) {
  console.error(`widgets test: no widgets in ${book}: run mdbook build`);
  process.exit(2);
}
fs.mkdirSync(shots, { recursive: true });

const local = served ? null : await serve(book);
const base = served?.replace(/\/$/, "") ?? local.base;

const browser = await launch();
const context = await browser.newContext({
  viewport: { width: 1280, height: 900 },
});
const failures = [];
const timings = [];
const loads = new Map(); // widget: its module load, ms

/** Opens `chapter`'s page and its widget; returns the page and problems. */
async function open(chapter, kind) {
  const problems = [];
  const page = await watchedPage(context, base, problems);
  const requested = [];
  page.on("request", (r) => requested.push(r.url()));
  await page.goto(`${base}/${chapter}.html`, { waitUntil: "load" });
  const widget = page.locator(`.widget[data-widget="${kind}"]`);
  if (!(await widget.isVisible())) problems.push("the widget is not shown");
  if (requested.some((u) => u.endsWith(".wasm"))) {
    problems.push("the module loaded before the widget was opened");
  }
  await widget.locator("summary").click();
  return { page, widget, problems };
}

/** Waits for the widget's current computation; returns its state. */
async function settled(widget) {
  await widget.page().waitForFunction((w) =>
    w.dataset.state === "done" || w.dataset.state === "error",
  await widget.elementHandle(), { timeout: 30000 });
  return widget.evaluate((w) => ({ state: w.dataset.state,
    ms: Number(w.dataset.ms), loadMs: Number(w.dataset.loadMs) }));
}

async function submit(widget, sentence) {
  await widget.evaluate((w) => { delete w.dataset.state; });
  await widget.locator("input[name=sentence]").fill(sentence);
  await widget.locator("button[type=submit]").click();
  return settled(widget);
}

function compareWeights(what, got, want, problems) {
  if (got.length !== want.length) {
    problems.push(`${what}: ${got.length} weights, expected ${want.length}`);
    return;
  }
  const worst = Math.max(0, ...got.map((g, i) => Math.abs(g - want[i])));
  if (worst > 1e-4) problems.push(`${what}: weights differ by ${worst}`);
}

async function translation(chapter, kind) {
  const { page, widget, problems } = await open(chapter, kind);
  // opening it translates its example sentence
  const first = await settled(widget);
  const example = await widget.locator(".widget-text").textContent();
  if (first.state !== "done" || !example) {
    problems.push(`${kind}: opening it translated nothing`);
  }
  for (const want of reference.translations.filter((t) => t.model === kind)) {
    const what = `${kind} on "${want.sentence}"`;
    const { state, ms, loadMs } = await submit(widget, want.sentence);
    if (state !== "done") {
      problems.push(`${what}: ${await widget.locator(".widget-message")
        .textContent()}`);
      continue;
    }
    loads.set(kind, loadMs);
    timings.push([`${kind}: "${want.sentence}" with its heatmaps`, ms]);
    const text = await widget.locator(".widget-text").textContent();
    if (text !== (want.text || "(nothing)")) {
      problems.push(`${what}: "${text}", natively "${want.text}"`);
    }
    const figures = await widget.locator(".widget-figure").evaluateAll(
      (boxes) => boxes.map((b) => Object.fromEntries(Object.entries(b.dataset)
        .map(([k, v]) => [k, JSON.parse(v)]))));
    if (figures.length !== want.figures.length) {
      problems.push(`${what}: ${figures.length} figures, natively ` +
        `${want.figures.length}`);
      continue;
    }
    figures.forEach((got, i) => {
      const w = want.figures[i];
      for (const key of ["kind", "grid", "queries", "keys"]) {
        if (JSON.stringify(got[key]) !== JSON.stringify(w[key])) {
          problems.push(`${what}, figure ${i}: ${key} ` +
            `${JSON.stringify(got[key])}, natively ${JSON.stringify(w[key])}`);
        }
      }
      compareWeights(`${what}, ${w.kind}`, got.weights, w.weights, problems);
    });
    if (want.unknown.length) {
      const note = await widget.locator(".widget-unknown")
        .textContent();
      if (!want.unknown.every((u) => note.includes(u))) {
        problems.push(`${what}: the note "${note}" misses ${want.unknown}`);
      }
    }
  }
  for (const e of reference.errors.filter((e) => e.widget === kind)) {
    const { state } = await submit(widget, e.input);
    const message = await widget.locator(".widget-message").textContent();
    if (state !== "error" || message !== shown(e.message)) {
      problems.push(`${kind} on ${JSON.stringify(e.input.slice(0, 20))}: ` +
        `"${message}", expected "${e.message}"`);
    }
  }
  await submit(widget, "I'm home.");
  return { page, widget, problems };
}

/** The Chinese edition's forms: their words, and the library's messages
 * that a form can cause, as the page shows them. */
const ZH = {
  testMse: "测试 MSE",
  "`sentence` is empty: type an English sentence":
    "`sentence` 为空：请输入一个英语句子",
  "`sentence` has 500 tokens (words and punctuation marks); the model reads at most 9":
    "`sentence` 有 500 个词元（单词和标点）；模型最多读取 9 个",
  "`bandwidth` is 0.05: the test input x = 0.0 has no training input within reach; widen the kernel":
    "`bandwidth` 为 0.05：测试输入 x = 0.0 的可及范围内没有训练输入；请加宽核",
};
const zh = await (async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/transformer.html`, { waitUntil: "load" });
  const lang = await page.evaluate(() => document.documentElement.lang);
  await page.close();
  return lang.startsWith("zh");
})();

/** A library message as the widget shows it: in the page's language, its
 * `quoted` names as code. */
const shown = (message) => (zh ? ZH[message] ?? message : message)
  .replaceAll("`", "");

/** Sets a form control and fires the event the widget listens to. */
async function set(widget, name, value, event) {
  await widget.evaluate((w) => { delete w.dataset.state; });
  await widget.locator(`[name=${name}]`).evaluate((input, [v, e]) => {
    input.value = v;
    input.dispatchEvent(new Event(e));
  }, [String(value), event]);
  return settled(widget);
}

async function nadarayaWatson() {
  const { page, widget, problems } = await open("nadaraya-watson",
    "nadaraya-watson");
  await settled(widget);
  for (const b of reference.bandwidths) {
    const { ms, loadMs } = await set(widget, "bandwidth", b.bandwidth, "input");
    loads.set("nadaraya-watson", loadMs);
    timings.push([`nadaraya-watson: slider step to σ = ${b.bandwidth}`, ms]);
    const mse = await widget.locator(".widget-mse").textContent();
    if (mse !== `${zh ? ZH.testMse : "test MSE"} ${b.test_mse}`) {
      problems.push(`σ = ${b.bandwidth}: "${mse}", the chapter ${b.test_mse}`);
    }
    if (await widget.locator(".widget-figure svg").count() !== 2) {
      problems.push(`σ = ${b.bandwidth}: not two figures`);
    }
  }
  await set(widget, "kernel", "boxcar", "change");
  const { state } = await set(widget, "bandwidth", "0.05", "input");
  const e = reference.errors.find((e) => e.input === "boxcar 0.05");
  const message = await widget.locator(".widget-message").textContent();
  if (state !== "error" || message !== shown(e.message)) {
    problems.push(`boxcar at 0.05: "${message}", expected "${e.message}"`);
  }
  if (await widget.locator(".widget-figure svg").count() !== 2) {
    problems.push("boxcar at 0.05: the last figures are gone");
  }
  await set(widget, "bandwidth", "0.5", "input");
  // What the form cannot send, straight to the module.
  const direct = await page.evaluate(async () => {
    const m = await import("./widgets/pkg/attention_widgets.js");
    await m.default();
    const error = (f) => { try { f(); return null; } catch (e) { return e.message; } };
    return {
      "cosine 1": error(() => m.nadaraya_watson("cosine", 1)),
      "gaussian 0": error(() => m.nadaraya_watson("gaussian", 0)),
      "0 60": error(() => m.positional_encoding(0, 60)),
      model: error(() => m.translate("lstm", "go .")),
    };
  });
  for (const e of reference.errors.filter((e) => e.input in direct)) {
    if (direct[e.input] !== e.message) {
      problems.push(`${e.input}: "${direct[e.input]}", expected "${e.message}"`);
    }
  }
  if (!direct.model?.startsWith("`model`")) {
    problems.push(`an unknown model: "${direct.model}"`);
  }
  return { page, widget, problems };
}

async function positionalEncoding() {
  const { page, widget, problems } = await open(
    "self-attention-positional-encoding", "positional-encoding");
  await settled(widget);
  const first = await widget.locator(".widget-figure").first().innerHTML();
  // the sliders' corners, then the chapter's figure
  for (const [dim, steps] of [[2, 10], [64, 10], [2, 100], [64, 100], [32, 60]]) {
    await set(widget, "encoding_dim", dim, "input");
    const { ms, loadMs } = await set(widget, "num_steps", steps, "input");
    loads.set("positional-encoding", loadMs);
    timings.push([`positional-encoding: slider step to ${dim} × ${steps}`, ms]);
    const svgs = await widget.locator(".widget-figure svg").count();
    if (svgs !== 2) problems.push(`${dim} × ${steps}: ${svgs} figures`);
  }
  await set(widget, "encoding_dim", 64, "input");
  const changed = await widget.locator(".widget-figure").first().innerHTML();
  if (changed === first) problems.push("a new width drew the same heatmap");
  await set(widget, "encoding_dim", 32, "input");
  return { page, widget, problems };
}

// Without JavaScript the widgets stay hidden and the figures remain.
{
  const page = await browser.newPage({ javaScriptEnabled: false });
  await page.goto(`${base}/transformer.html`, { waitUntil: "load" });
  if (await page.locator(".widget").isVisible()) {
    failures.push("without JavaScript: the widget is shown");
  }
  if (await page.locator("main figure object").count() === 0) {
    failures.push("without JavaScript: no figures");
  }
  await page.close();
}

// In print the widgets are absent, an opened one too.
{
  const problems = [];
  const page = await watchedPage(context, base, problems);
  await page.goto(`${base}/nadaraya-watson.html`, { waitUntil: "load" });
  const widget = page.locator(".widget");
  await widget.locator("summary").click();
  await settled(widget);
  await page.emulateMedia({ media: "print" });
  if (await widget.evaluate((w) => getComputedStyle(w).display) !== "none") {
    failures.push("in print: the widget is shown");
  }
  failures.push(...problems.map((p) => `in print: ${p}`));
  await page.close();
}

const runs = [
  ["nadaraya-watson", nadarayaWatson],
  ["bahdanau", () => translation("bahdanau-attention", "bahdanau")],
  ["positional-encoding", positionalEncoding],
  ["transformer", () => translation("transformer", "transformer")],
];
for (const [name, run] of runs) {
  const { page, widget, problems } = await run();
  await widget.screenshot({ path: path.join(shots, `widget-${name}.png`) });
  await page.close();
  console.log(`${name}: ${problems.length ? "FAILED" : "ok"}`);
  failures.push(...problems.map((p) => `${name}: ${p}`));
}
await browser.close();
local?.server.close();

const wasm = fs.statSync(path.join(book, "widgets/pkg/attention_widgets_bg.wasm"));
console.log(`\nmodule: ${(wasm.size / 1e6).toFixed(2)} MB; times in ms, ` +
  "measured in the page (headless Chromium, this machine):");
for (const [what, ms] of timings) {
  console.log(`  ${ms.toFixed(1).padStart(7)}  ${what}`);
}
for (const [widget, ms] of loads) {
  console.log(`  ${ms.toFixed(1).padStart(7)}  ${widget}: module load`);
}
if (failures.length) {
  console.error(`\n${failures.length} problem(s):\n${failures.join("\n")}`);
  process.exit(1);
}
console.log(`\n4 widgets ok; screenshots in ${shots}`);
