//! The facts the Transformer chapter's trainings must print on any
//! machine: the committed outputs pass, and each fact fails when its line
//! says otherwise.

use d2l_attention::listings::transformer_exercises::variants_facts;
use d2l_attention::listings::transformer_training::{
    comparison_facts, larger_facts, train_facts,
};

fn committed(name: &str) -> String {
    let path =
        format!("{}/../../figures/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

/// `text` with the first occurrence of `from` replaced by `to`.
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "`{from}` not in the output");
    text.replacen(from, to, 1)
}

#[test]
fn the_training_s_facts_hold_and_fail_where_they_should() {
    let text = committed("transformer-train");
    train_facts(&text).unwrap();
    // another machine may translate "go ." otherwise
    let line = text.lines().nth(1).unwrap();
    let other = edit(&text, line, "go . => allons-y !, bleu 0.000");
    train_facts(&other).unwrap();
    let first = text.lines().next().unwrap();
    for broken in [
        edit(&text, first, "loss 0.090 after 200 epochs on flex"),
        edit(&text, first, "loss 0.030 after 100 epochs on flex"),
        edit(
            &text,
            "je suis chez moi ., bleu 1.000",
            "je suis ., bleu 0.368",
        ),
        edit(
            &text,
            "go . => va !, bleu 1.000",
            "go . => va !, bleu 1.500",
        ),
        edit(&text, "queries: i'm home . <eos>", "queries: i'm home ."),
    ] {
        assert!(train_facts(&broken).is_err(), "{broken}");
    }
}

#[test]
fn the_comparison_s_facts_hold_and_fail_where_they_should() {
    let text = committed("transformer-vs-bahdanau");
    comparison_facts(&text).unwrap();
    let home = text.lines().find(|l| l.contains("i'm home")).unwrap();
    let lost = home.replacen("1.000", "0.500", 1);
    let short: String =
        text.lines().take(8).map(|l| format!("{l}\n")).collect();
    for broken in [edit(&text, home, &lost), short] {
        assert!(comparison_facts(&broken).is_err(), "{broken}");
    }
}

#[test]
fn the_larger_comparison_s_facts_hold_and_fail_where_they_should() {
    let text = committed("transformer-larger");
    larger_facts(&text).unwrap();
    let bahdanau = text.lines().nth(1).unwrap();
    let first = bahdanau.split("(first ").nth(1).unwrap();
    let first = first.split(',').next().unwrap();
    for broken in [
        edit(&text, "5388 training pairs", "5387 training pairs"),
        // the lowest validation loss above the first
        edit(&text, &format!("(first {first}"), "(first 0.100"),
        edit(&text, ", epoch ", ", epoch 99 or "),
    ] {
        assert!(larger_facts(&broken).is_err(), "{broken}");
    }
}

#[test]
fn the_variants_facts_hold_and_fail_where_they_should() {
    let text = committed("transformer-variants");
    variants_facts(&text).unwrap();
    let deeper = text.lines().nth(2).unwrap();
    let ratio = deeper.split_whitespace().last().unwrap();
    for broken in [
        edit(&text, "102921", "102920"),
        text.lines().take(4).map(|l| format!("{l}\n")).collect(),
        // the deeper model no slower than d2l's
        edit(&text, deeper, &deeper.replace(ratio, "0.95")),
    ] {
        assert!(variants_facts(&broken).is_err(), "{broken}");
    }
}
