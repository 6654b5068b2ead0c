// The book's widgets (README, "The widgets"). Each page that has one holds
// `<div class="widget" data-widget="…" hidden>` with a <details> inside; this
// script shows it (without JavaScript, or in a page opened as a file, it
// stays hidden and the page's static figures are all there is) and, when
// the reader first opens one, loads the
// library compiled to WebAssembly (pkg/, built by scripts/build-widgets).
// Everything computed comes from the library: this file only builds the
// forms and puts the returned figures in the page.

// A classic script (so that a page opened as a file, where browsers refuse
// modules, still loads it), in a function that keeps its names to itself.
(() => {
const STYLE = `
.widget { margin: 1em 0 1.5em; border: 1px solid var(--quote-border, #ccc);
  border-radius: 4px; padding: 0.3em 0.8em; }
.widget summary { cursor: pointer; font-weight: bold; }
.widget form { display: flex; flex-wrap: wrap; gap: 0.5em 1em;
  align-items: center; margin: 0.6em 0; }
.widget input[type=text] { flex: 1 1 16em; font-size: 1em; padding: 0.2em; }
.widget button, .widget input, .widget select { font-family: inherit; }
.widget .widget-message { color: #b00020; }
.coal .widget .widget-message, .navy .widget .widget-message,
.ayu .widget .widget-message { color: #ff8a80; }
.widget code, .widget .widget-text { unicode-bidi: isolate; }
.widget .widget-output, .widget .widget-message { overflow-wrap: anywhere; }
.widget .widget-figures.stale { opacity: 0.35; }
.widget .widget-note, .widget .widget-unknown { font-size: 0.9em; }
.widget .widget-caption { font-size: 0.85em; font-style: italic; margin: 0; }
.widget .widget-figures { display: flex; flex-wrap: wrap; gap: 0.8em; }
.widget .widget-figure { max-width: 100%; }
.widget .widget-figure svg { display: block; max-width: 100%; height: auto; }
@media print { .widget { display: none !important; } }
`;

// The forms' words in the page's language (the Chinese edition's pages
// are <html lang="zh-CN">). The library's messages are English (its API's,
// doc-tested); `messages` puts those a form can cause in the page's
// language, the numbers they quote kept, and leaves any other as it is.
const WORDS = document.documentElement.lang.startsWith("zh") ? {
  loading: "正在加载本书编译为 WebAssembly 的代码……",
  sentence: "一个英语句子", translate: "翻译", readAs: "读作 ",
  translatedAs: "，译为 ", nothing: "（空）",
  unknown: "读作 <unk> 的词（训练数据中没有的词，或模型的控制词元）：",
  tatoeba: "模型在 Tatoeba（tatoeba.org，许可证 CC-BY 2.0 France）的 600 个" +
    "英语－法语句对上训练，句对按 d2l 的方式打包；它只认识这些句子里的词。",
  encoder: "编码器自注意力：源词元彼此之间",
  decoder: "解码器自注意力：每个写出的词元，对它读入的词元",
  cross: "编码器－解码器注意力：每个写出的词元，对源序列",
  kernel: "核", bandwidth: "带宽", testMse: "测试 MSE",
  width: "编码宽度", positions: "位置数",
  messages: [
    [/^`sentence` is empty: type an English sentence$/,
      "`sentence` 为空：请输入一个英语句子"],
    [/^`sentence` has (\d+) tokens \(words and punctuation marks\); the model reads at most (\d+)$/,
      "`sentence` 有 $1 个词元（单词和标点）；模型最多读取 $2 个"],
    [/^`bandwidth` is ([\d.]+): the test input x = (-?[\d.]+) has no training input within reach; widen the kernel$/,
      "`bandwidth` 为 $1：测试输入 x = $2 的可及范围内没有训练输入；请加宽核"],
  ],
} : {
  loading: "Loading the book's code, compiled to WebAssembly…",
  sentence: "An English sentence", translate: "Translate", readAs: "Read as ",
  translatedAs: ", translated as ", nothing: "(nothing)",
  unknown: "Read as <unk> (not in the training data, or a control token): ",
  tatoeba: "The model was trained on 600 English–French sentence pairs " +
    "from Tatoeba (tatoeba.org, licence CC-BY 2.0 France), as d2l packages " +
    "them; it knows only their words.",
  encoder: "Encoder self-attention: the source tokens attending to each other",
  decoder: "Decoder self-attention: each token written, over the tokens read",
  cross: "Encoder–decoder attention: each token written, over the source",
  kernel: "Kernel", bandwidth: "Bandwidth", testMse: "test MSE",
  width: "Encoding width", positions: "Positions", messages: [],
};

/** The library's `message` in the page's language (see WORDS). */
function localised(message) {
  const found = WORDS.messages.find(([pattern]) => pattern.test(message));
  return found ? message.replace(found[0], found[1]) : message;
}

const GLUE = new URL("pkg/attention_widgets.js", document.currentScript.src);
let module = null;

/** The wasm module, loaded once, on first use; its load time in ms. */
function load() {
  if (!module) {
    const start = performance.now();
    module = import(GLUE.href).then(async (m) => {
      await m.default();
      return { m, ms: performance.now() - start };
    });
  }
  return module;
}

function el(tag, props = {}, children = []) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

/** `text` with its `quoted` names (the library's messages quote the
 * input they name so) as code. */
function withCode(text) {
  return text.split("`").map((part, i) =>
    i % 2 ? el("code", { textContent: part }) : part);
}

/** Runs `f` on the module and `show` on its result, timing both up to
 * the next frame; shows an error as the message, and a line while the
 * module loads. Returns whether it succeeded. */
async function compute(widget, f, show) {
  const message = widget.querySelector(".widget-message");
  message.replaceChildren();
  widget.dataset.state = "busy";
  delete widget.dataset.ms;
  const loaded = module !== null;
  if (!loaded) {
    message.textContent = WORDS.loading;
  }
  try {
    const { m, ms } = await load();
    if (!loaded) message.replaceChildren();
    widget.dataset.loadMs = ms.toFixed(1);
    const start = performance.now();
    show(JSON.parse(f(m)));
    await new Promise(requestAnimationFrame);
    widget.dataset.ms = (performance.now() - start).toFixed(1);
    widget.dataset.state = "done";
    return true;
  } catch (err) {
    message.replaceChildren(...withCode(localised(String(err.message ?? err))));
    widget.dataset.state = "error";
    return false;
  }
}

let figures = 0;

/** A figure from the library's SVG text, with its data for the tests. Its
 * ids (a plot's clip path is `axes`) are made unique in the page, where
 * several inline figures would otherwise share them. */
function figure(svg, data = {}, caption = "") {
  const box = el("div", { className: "widget-figure" });
  const n = ++figures;
  box.innerHTML = svg.replaceAll('id="', `id="w${n}-`)
    .replaceAll("url(#", `url(#w${n}-`);
  if (caption) box.prepend(el("p", { className: "widget-caption", textContent: caption }));
  for (const [key, value] of Object.entries(data)) {
    box.dataset[key] = JSON.stringify(value);
  }
  return box;
}

function translation(widget, body) {
  const model = widget.dataset.widget;
  const text = el("input", { type: "text", name: "sentence",
    value: "I'm home.", ariaLabel: WORDS.sentence });
  const form = el("form", {}, [text,
    el("button", { type: "submit", textContent: WORDS.translate })]);
  const out = el("div", { className: "widget-output" });
  body.append(form, el("p", { className: "widget-message" }), out,
    el("p", { className: "widget-note", textContent: WORDS.tatoeba }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    out.replaceChildren();
    await compute(widget, (m) => m.translate(model, text.value), (t) => {
      widget.dataset.text = t.text;
      out.append(el("p", {}, [WORDS.readAs, el("code", { textContent: t.source }),
        WORDS.translatedAs, el("strong", { className: "widget-text",
          textContent: t.text || WORDS.nothing })]));
      if (t.unknown.length) {
        out.append(el("p", { className: "widget-unknown", textContent:
          WORDS.unknown + t.unknown.join(" ") }));
      }
      out.append(el("div", { className: "widget-figures" }, t.figures.map((f) =>
        figure(f.svg, { kind: f.kind, grid: f.grid, queries: f.queries,
          keys: f.keys, weights: f.weights }, WORDS[f.kind]))));
    });
  });
  // translate the example at once, so that opening the widget loads the
  // module and shows what it does (as the other widgets draw at once)
  form.requestSubmit();
}

function nadarayaWatson(widget, body) {
  const kernel = el("select", { name: "kernel", ariaLabel: WORDS.kernel },
    ["gaussian", "boxcar", "constant", "epanechikov"].map((k) =>
      el("option", { value: k, textContent: k })));
  const bandwidth = el("input", { type: "range", name: "bandwidth",
    min: "0.05", max: "2", step: "0.05", value: "0.5",
    ariaLabel: WORDS.bandwidth });
  // the slider is the Gaussian's σ, or the width h that divides every
  // distance for the other kernels
  const symbol = () => (kernel.value === "gaussian" ? "σ" : "h");
  const shown = el("output", { textContent: "σ = 0.5" });
  const mse = el("output", { className: "widget-mse" });
  const out = el("div", { className: "widget-figures" });
  body.append(el("form", {}, [el("label", {}, [`${WORDS.kernel} `, kernel]),
    el("label", {}, [`${WORDS.bandwidth} `, bandwidth]), shown, mse]),
  el("p", { className: "widget-message" }), out);
  const redraw = async () => {
    const h = Number(bandwidth.value);
    shown.textContent = `${symbol()} = ${h}`;
    mse.textContent = "";
    const ok = await compute(widget,
      (m) => m.nadaraya_watson(kernel.value, h), (e) => {
        mse.textContent = `${WORDS.testMse} ${e.test_mse.toFixed(4)}`;
        out.replaceChildren(figure(e.estimate), figure(e.heatmap));
      });
    // on an error the last figures stay, dimmed, so that the page holds
    // still while the reader drags
    out.classList.toggle("stale", !ok);
  };
  kernel.addEventListener("change", redraw);
  bandwidth.addEventListener("input", redraw);
  redraw();
}

function positionalEncoding(widget, body) {
  const slider = (name, label, min, max, step, value) => {
    const input = el("input", { type: "range", name, min, max, step, value,
      ariaLabel: label });
    const shown = el("output", { textContent: value });
    input.addEventListener("input", () => { shown.textContent = input.value; });
    return [input, el("label", {}, [`${label} `, input, " ", shown])];
  };
  // up to 64 × 100 cells: a slider step stays under 0.1 s
  const [dim, dimLabel] = slider("encoding_dim", WORDS.width, "2",
    "64", "2", "32");
  const [steps, stepsLabel] = slider("num_steps", WORDS.positions, "10", "100",
    "10", "60");
  const out = el("div", { className: "widget-figures" });
  body.append(el("form", {}, [dimLabel, stepsLabel]),
    el("p", { className: "widget-message" }), out);
  const redraw = async () => {
    const ok = await compute(widget, (m) =>
      m.positional_encoding(Number(dim.value), Number(steps.value)),
    (p) => out.replaceChildren(figure(p.heatmap), figure(p.columns)));
    if (!ok) out.replaceChildren();
  };
  dim.addEventListener("input", redraw);
  steps.addEventListener("input", redraw);
  redraw();
}

const WIDGETS = {
  transformer: translation,
  bahdanau: translation,
  "nadaraya-watson": nadarayaWatson,
  "positional-encoding": positionalEncoding,
};

// Browsers fetch no module under file://: there the widgets stay hidden.
// print.html holds every chapter, so this script once per widget page.
if (location.protocol === "file:" || window.attentionWidgets) return;
window.attentionWidgets = true;
document.head.append(el("style", { textContent: STYLE }));
for (const widget of document.querySelectorAll(".widget[data-widget]")) {
  const build = WIDGETS[widget.dataset.widget];
  const details = widget.querySelector("details");
  if (!build || !details) continue;
  widget.hidden = false;
  details.addEventListener("toggle", () => {
    if (!details.open || widget.dataset.built) return;
    widget.dataset.built = "yes";
    const body = el("div", { className: "widget-body" });
    details.append(body);
    build(widget, body);
  });
}
})();
