//! The widgets' computations run natively on the committed models
//! (`models/`), as the WebAssembly build runs them in the browser:
//! - the four example sentences translate as the chapters' training
//!   outputs printed (so the committed weights are the ones the pages
//!   show);
//! - the bandwidth slider at the chapter's four σ gives the test MSEs the
//!   chapter printed;
//! - bad input gets a message naming it, and control tokens typed in a
//!   sentence read as `<unk>`;
//! - `tests/browser/widgets-reference.json`, what the browser test
//!   (`tests/browser/widgets.mjs`) compares the pages' widgets with, is what
//!   the library computes now: texts exactly, weights within 1e-4.
//!   `UPDATE_WIDGET_REFERENCE=1` rewrites it (scripts/build-widgets does).

use std::path::{Path, PathBuf};

use d2l_attention::bahdanau::{BahdanauModel, Seq2SeqConfig};
use d2l_attention::files::write_atomic;
use d2l_attention::listings::bahdanau::EXAMPLES;
use d2l_attention::transformer::{TransformerConfig, TransformerModel};
use d2l_attention::widgets::{
    Translator, kernel_named, nadaraya_watson_at, positional_encoding_figures,
};
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(root().join(path))
        .unwrap_or_else(|e| panic!("cannot read `{path}`: {e}"))
}

fn bahdanau() -> Translator<BahdanauModel> {
    let name = "models/bahdanau-fra-eng.bpk";
    Translator::from_bytes(&read(name), name, Seq2SeqConfig::init).unwrap()
}

fn transformer() -> Translator<TransformerModel> {
    let name = "models/transformer-fra-eng.bpk";
    Translator::from_bytes(&read(name), name, TransformerConfig::init).unwrap()
}

/// The four example translations a training listing printed.
fn printed(output: &str) -> Vec<(String, String)> {
    let text = String::from_utf8(read(output)).unwrap();
    text.lines()
        .filter_map(|line| line.split_once(" => "))
        .map(|(eng, rest)| {
            let fra = rest.rsplit_once(", bleu ").expect("a bleu").0;
            (eng.to_owned(), fra.to_owned())
        })
        .collect()
}

#[test]
fn the_examples_translate_as_the_chapters_printed() {
    let (b, t) = (bahdanau(), transformer());
    let bahdanau_lines = printed("figures/bahdanau-train.txt");
    let transformer_lines = printed("figures/transformer-train.txt");
    assert_eq!(bahdanau_lines.len(), EXAMPLES.len());
    assert_eq!(transformer_lines.len(), EXAMPLES.len());
    for (eng, fra) in bahdanau_lines {
        assert_eq!(b.translate(&eng).unwrap().text, fra, "Bahdanau, {eng}");
    }
    for (eng, fra) in transformer_lines {
        assert_eq!(t.translate(&eng).unwrap().text, fra, "Transformer, {eng}");
    }
}

#[test]
fn the_bandwidth_slider_gives_the_chapter_s_test_errors() {
    let text = String::from_utf8(read("figures/nw-bandwidth.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    for (line, sigma) in lines.iter().zip([0.1, 0.2, 0.5, 1.0]) {
        let e = nadaraya_watson_at(kernel_named("gaussian").unwrap(), sigma)
            .unwrap();
        let mse = line.rsplit_once("test MSE ").unwrap().1;
        assert_eq!(format!("{:.4}", e.test_mse), mse, "σ = {sigma}");
    }
}

/// (widget, input, the message the reader sees).
fn bad_inputs() -> Vec<(&'static str, String, String)> {
    let (b, t) = (bahdanau(), transformer());
    let long = "go ".repeat(500);
    let mut found = Vec::new();
    for input in [String::new(), "   ".to_owned(), long] {
        for (name, err) in [
            ("bahdanau", b.translate(&input).unwrap_err()),
            ("transformer", t.translate(&input).unwrap_err()),
        ] {
            found.push((name, input.clone(), err.to_string()));
        }
    }
    let nw = |kernel: &str, h: f32| {
        kernel_named(kernel)
            .and_then(|k| nadaraya_watson_at(k, h))
            .unwrap_err()
            .to_string()
    };
    found.push(("nadaraya-watson", "boxcar 0.05".into(), nw("boxcar", 0.05)));
    found.push(("nadaraya-watson", "cosine 1".into(), nw("cosine", 1.0)));
    found.push(("nadaraya-watson", "gaussian 0".into(), nw("gaussian", 0.0)));
    let pe = positional_encoding_figures(0, 60).unwrap_err().to_string();
    found.push(("positional-encoding", "0 60".into(), pe));
    found
}

#[test]
fn bad_input_gets_a_message_naming_it() {
    let found = bad_inputs();
    let named = [
        "`sentence`",
        "`sentence`",
        "`sentence`",
        "`sentence`",
        "`sentence`",
        "`sentence`",
        "`bandwidth`",
        "`kernel`",
        "`bandwidth`",
        "`encoding_dim`",
    ];
    assert_eq!(found.len(), named.len());
    for ((widget, input, message), arg) in found.iter().zip(named) {
        assert!(message.starts_with(arg), "{widget} on {input:?}: {message}");
    }
    assert!(found[4].2.contains("has 500 tokens"), "{}", found[4].2);
    // Unknown words and emoji are read as <unk>, and named.
    let t = transformer().translate("Zorro sees 😀!").unwrap();
    assert_eq!(t.source, "<unk> <unk> <unk> !");
    assert!(t.unknown.contains(&"zorro".to_owned()), "{:?}", t.unknown);
    assert!(t.unknown.contains(&"😀".to_owned()), "{:?}", t.unknown);
}

/// A translation's JSON without its SVG (the browser test compares the
/// data the figures were drawn from).
fn without_svg(mut value: Value) -> Value {
    for figure in value["figures"].as_array_mut().unwrap() {
        figure.as_object_mut().unwrap().remove("svg");
    }
    value
}

/// Sentences that spell the models' reserved tokens, as a reader may type
/// them: each reads as `<unk>` and is listed as unknown, so the model never
/// reads a control token from the reader's text (they translate: no error).
const CONTROL_TOKENS: [&str; 3] =
    ["go <eos> now", "<pad> <pad> go .", "<bos> hi ."];

#[test]
fn typed_control_tokens_read_as_unk() {
    let (b, t) = (bahdanau(), transformer());
    let expected = [
        ("go <unk> now", vec!["<eos>"]),
        ("<unk> <unk> go .", vec!["<pad>", "<pad>"]),
        ("<unk> hi .", vec!["<bos>"]),
    ];
    for (sentence, (source, unknown)) in CONTROL_TOKENS.iter().zip(expected) {
        for out in [
            b.translate(sentence).unwrap(),
            t.translate(sentence).unwrap(),
        ] {
            assert_eq!(out.source, source, "{sentence}");
            assert_eq!(out.unknown, unknown, "{sentence}");
            assert_eq!(out.figures[0].keys.last().unwrap(), "<eos>");
            let keys = &out.figures[0].keys;
            let reserved = ["<pad>", "<bos>", "<eos>"];
            assert!(
                !keys[..keys.len() - 1]
                    .iter()
                    .any(|k| reserved.contains(&k.as_str())),
                "{sentence}: {keys:?}"
            );
        }
    }
}

/// What the browser test expects of the pages' widgets.
fn reference() -> Value {
    let (b, t) = (bahdanau(), transformer());
    let mut translations = Vec::new();
    let typed = ["Zorro sees 😀!", "I’m home.", "Supercalifragilistic!"];
    let sentences = EXAMPLES
        .iter()
        .map(|(eng, _)| *eng)
        .chain(typed)
        .chain(CONTROL_TOKENS);
    for sentence in sentences {
        for (model, out) in [
            ("bahdanau", b.translate(sentence).unwrap()),
            ("transformer", t.translate(sentence).unwrap()),
        ] {
            let mut value = without_svg(out.to_json());
            value["model"] = json!(model);
            value["sentence"] = json!(sentence);
            translations.push(value);
        }
    }
    let bandwidths: Vec<Value> = [0.1f64, 0.2, 0.5, 1.0]
        .into_iter()
        .map(|h| {
            let gaussian = kernel_named("gaussian").unwrap();
            let e = nadaraya_watson_at(gaussian, h as f32);
            json!({ "kernel": "gaussian", "bandwidth": h,
                    "test_mse": format!("{:.4}", e.unwrap().test_mse) })
        })
        .collect();
    let errors: Vec<Value> = bad_inputs()
        .into_iter()
        .map(|(widget, input, message)| {
            json!({ "widget": widget, "input": input, "message": message })
        })
        .collect();
    json!({ "translations": translations, "bandwidths": bandwidths,
            "errors": errors })
}

/// Every difference between `got` and `want`: numbers within 1e-4, the
/// rest exactly.
fn differences(path: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            if (a - b).abs() > 1e-4 {
                out.push(format!("{path}: {a} here, {b} in the reference"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (a, b)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), a, b, out);
            }
        }
        (Value::Object(a), Value::Object(b)) if a.keys().eq(b.keys()) => {
            for (key, a) in a {
                differences(&format!("{path}.{key}"), a, &b[key], out);
            }
        }
        _ if got == want => {}
        _ => out.push(format!("{path}: {got} here, {want} in the reference")),
    }
}

#[test]
fn the_browser_test_s_reference_is_what_the_library_computes() {
    let file = root().join("tests/browser/widgets-reference.json");
    let now = reference();
    if std::env::var_os("UPDATE_WIDGET_REFERENCE").is_some() {
        let text = serde_json::to_string_pretty(&now).unwrap() + "\n";
        write_atomic(&file, text.as_bytes()).unwrap();
        return;
    }
    let committed: Value =
        serde_json::from_slice(&read("tests/browser/widgets-reference.json"))
            .unwrap();
    let mut found = Vec::new();
    differences("", &now, &committed, &mut found);
    assert!(
        found.is_empty(),
        "tests/browser/widgets-reference.json is stale (run \
         scripts/build-widgets):\n{}",
        found.join("\n")
    );
}
