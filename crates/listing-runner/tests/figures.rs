//! The committed figures and captured outputs are what the code makes now.

use std::fs;
use std::path::{Path, PathBuf};

use std::fmt::Write;

use attention_book::compare::{Format, compare, report};
use attention_book::fingerprint::{fingerprint, workspace_root};
use attention_book::table::registered as table;
use attention_book::{FAILED, MANIFEST, content_hash, fix_hint, read_manifest};
use burn::tensor::Device;
use d2l_attention::BackendChoice;
use d2l_attention::listings::{self, Check, Listing, Output};
use listing_runner::{check_output, registered, render};
use regex::{Captures, Regex};

fn figures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../figures")
}

const HOW_TO_FIX: &str = "run `mdbook build` (or `cargo run --release -p listing-runner -- render`) and commit figures/";

/// The preprocessor's table, read from the sources, is the library's.
#[test]
fn the_table_read_from_the_sources_is_the_library_s() {
    let all: Vec<_> = listings::all().iter().map(registered).collect();
    assert_eq!(table(&workspace_root()).unwrap(), all);
}

/// The preprocessor's reading of `D2L_DEVICE` (which links no library) is
/// the library's: the same names accepted, written the same way, so that
/// both compute the same fingerprints.
#[test]
fn the_preprocessor_names_backends_as_the_library_does() {
    use attention_book::runner::backend_name;
    for given in [
        "flex",
        " FLEX ",
        "libtorch",
        "LibTorch",
        "libtorch-cuda:0",
        "libtorch-cuda:01",
        "libtorch-cuda:12",
        "cuda",
        "libtorch-cuda:",
        "libtorch-cuda:-1",
        "flex2",
        "tch",
    ] {
        let library =
            given.parse::<BackendChoice>().ok().map(|b| b.to_string());
        assert_eq!(backend_name(given), library, "{given:?}");
    }
    assert_eq!(backend_name("").as_deref(), Some("flex"));
}

#[test]
fn every_listing_was_rendered_from_the_current_code() {
    let manifest = read_manifest(&figures());
    for l in listings::all() {
        let entry = manifest.get(l.name).unwrap_or_else(|| {
            panic!("`{}` was never rendered; {HOW_TO_FIX}", l.name)
        });
        assert_eq!(
            entry.fingerprint,
            fingerprint(&workspace_root(), &registered(&l), "flex").unwrap(),
            "`{}` changed since its outputs were made; {HOW_TO_FIX}",
            l.name
        );
        assert!(
            !entry.files.is_empty(),
            "`{}` lists no files; {HOW_TO_FIX}",
            l.name
        );
        for (f, hash) in &entry.files {
            let bytes = fs::read(figures().join(f))
                .unwrap_or_else(|e| panic!("figures/{f}: {e}; {HOW_TO_FIX}"));
            assert_eq!(
                &content_hash(&bytes),
                hash,
                "figures/{f} was changed by hand; {}",
                fix_hint(l.name, &figures())
            );
        }
    }
}

/// Every listing that `cargo test` can run (the fast ones) agrees with the
/// committed files within tolerance. (Made by another process, often on
/// another machine, those files also catch hidden randomness.)
#[test]
fn captured_outputs_match_what_the_listings_print_and_draw() {
    let device = BackendChoice::Flex.device().unwrap();
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    for l in listings::all() {
        let committed_text =
            fs::read_to_string(figures().join(format!("{}.txt", l.name)));
        if let Check::Facts(facts) = l.check {
            // Too slow to rerun here; `listing-runner check` reruns it in CI.
            if let Err(e) = facts(&committed_text.unwrap_or_default()) {
                problems.push(format!("figures/{}.txt: {e:#}", l.name));
            }
            continue;
        }
        let out = l.execute(&device, &workspace_root()).unwrap();
        problems.extend(check_output(&l, &out, &figures()));
        for (name, _) in out.files(l.name) {
            assert!(!seen.contains(&name), "two listings write figures/{name}");
            seen.push(name);
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The committed files without a number that has a fraction.
const EXACT_FILES: &[&str] = &[
    "bahdanau-shapes.txt",
    "efficient-gqa.txt",
    "mha-burn.txt",
    "mha-cost.txt",
    "mha-pytorch.txt",
    "mha-shapes.txt",
    "pe-binary.txt",
    "pretrain-data.txt",
    "pretrain-source.txt",
    "pretrain-t5.txt",
    "sa-complexity.txt",
    "sa-matrix-form.txt",
    "sa-permutation.txt",
    "sa-shapes.txt",
    "transformer-cache.txt",
    "transformer-causal-mask.txt",
    "transformer-decoder-only.txt",
    "transformer-ffn.txt",
    "transformer-long.txt",
    "transformer-shapes.txt",
    "vit-block.txt",
    "vit-data.txt",
    "vit-patch-embedding.txt",
    "vit-sizes.txt",
];

/// Every committed file, with another machine's last digits (simulated by
/// [`perturb`]), is still the same result.
#[test]
fn last_digit_noise_in_any_committed_file_passes() {
    let manifest = read_manifest(&figures());
    let files: Vec<&String> = manifest
        .values()
        .flat_map(|e| e.files.iter().map(|(f, _)| f))
        .collect();
    assert!(files.len() > 30, "{files:?}");
    let mut unchanged = Vec::new();
    for name in &files {
        let committed = fs::read_to_string(figures().join(name)).unwrap();
        let noisy = perturb(&committed, Format::of(name));
        if noisy == committed {
            unchanged.push(name.as_str());
        }
        let mismatches = compare(&committed, &noisy, Format::of(name));
        assert!(mismatches.is_empty(), "{}", report(name, &mismatches));
    }
    // Only files without a fraction (shapes, counts, yes/no answers: exact
    // by design) stay as they were.
    unchanged.sort_unstable();
    assert_eq!(unchanged, EXACT_FILES);
}

/// Another machine's version of a committed file: one unit more in the last
/// digit of every number with a fraction, and in SVGs one pixel more in
/// every position and size and one step more (or less, at 255) in every
/// colour channel.
fn perturb(text: &str, format: Format) -> String {
    let fraction = Regex::new(r"-?\d+\.(\d+)").unwrap();
    let text = fraction.replace_all(text, |c: &Captures| {
        let decimals = c[1].len();
        let value: f64 = c[0].parse().unwrap();
        format!("{:.*}", decimals, value + 10f64.powi(-(decimals as i32)))
    });
    if format == Format::Text {
        return text.into_owned();
    }
    let attribute =
        Regex::new(r#" (x|y|x1|y1|x2|y2|cx|cy|r|width|height)="(\d+)""#)
            .unwrap();
    let text = attribute.replace_all(&text, |c: &Captures| {
        format!(" {}=\"{}\"", &c[1], c[2].parse::<i64>().unwrap() + 1)
    });
    let point = Regex::new(r"(\d+),(\d+)").unwrap();
    let text = point.replace_all(&text, |c: &Captures| {
        let up = |k: usize| c[k].parse::<i64>().unwrap() + 1;
        format!("{},{}", up(1), up(2))
    });
    let colour = Regex::new(r"#([0-9A-Fa-f]{6})\b").unwrap();
    colour
        .replace_all(&text, |c: &Captures| {
            let step = |k: usize| {
                let v = u8::from_str_radix(&c[1][k..k + 2], 16).unwrap();
                if v == 255 { v - 1 } else { v + 1 }
            };
            format!("#{:02X}{:02X}{:02X}", step(0), step(2), step(4))
        })
        .into_owned()
}

#[test]
fn perturbation_changes_every_kind_of_value_it_should() {
    let svg = r##"<rect x="52" y="45" fill="#FFF5F0" opacity="0.5"/><polyline points="6,9 10,12"/>"##;
    assert_eq!(
        perturb(svg, Format::Svg),
        r##"<rect x="53" y="46" fill="#FEF6F1" opacity="0.6"/><polyline points="7,10 11,13"/>"##
    );
    assert_eq!(
        perturb("loss 34.527077, shape [2,4]", Format::Text),
        "loss 34.527078, shape [2,4]"
    );
}

/// The parametric Nadaraya–Watson listing's printed text, made with the
/// library's public API and learning rate `lr` (the listing uses 0.5).
fn nw_parametric_text(lr: f64) -> String {
    use d2l_attention::listings::nw::SEED;
    use d2l_attention::nadaraya_watson::{Dataset, NWKernelRegression, train};
    use d2l_attention::random::randn;
    let device = Device::flex().autodiff();
    let data = Dataset::generate(50, SEED, &device);
    let w0 = randn([1], SEED, &device).into_scalar::<f32>();
    let mut text = format!("start: w {w0:.4}\n");
    let model = NWKernelRegression::new(w0, &device);
    let (x, y) = (data.x_train.clone(), data.y_train.clone());
    let model = train(model, x, y, lr, 5, |log| {
        let (epoch, loss, w) = (log.epoch, log.loss, log.w);
        writeln!(text, "epoch {epoch}, loss {loss:.6}, w {w:.4}").unwrap();
    })
    .unwrap();
    let keys = data.x_train.clone().unsqueeze::<2>().expand([50, 50]);
    let values = data.y_train.clone().unsqueeze::<2>().expand([50, 50]);
    let (y_hat, _) = model.forward(data.x_test.clone(), keys, values);
    writeln!(text, "test MSE {:.3}", data.test_mse(y_hat)).unwrap();
    text
}

#[test]
fn a_real_change_to_a_listing_fails_the_comparison_with_a_readable_diff() {
    let committed =
        fs::read_to_string(figures().join("nw-parametric.txt")).unwrap();
    // The same computation agrees: this test rebuilds the listing faithfully.
    let same = compare(&committed, &nw_parametric_text(0.5), Format::Text);
    assert!(same.is_empty(), "{}", report("nw-parametric.txt", &same));
    // A learning rate of 0.45 instead of 0.5 changes every line but the
    // first (the starting w): 5 epochs (the first's loss is computed before
    // the first step, its w after) and the test MSE.
    let changed = compare(&committed, &nw_parametric_text(0.45), Format::Text);
    assert_eq!(
        changed.len(),
        6,
        "{}",
        report("nw-parametric.txt", &changed)
    );
    let text = report("figures/nw-parametric.txt", &changed);
    let second = committed.lines().nth(1).unwrap();
    assert!(
        text.contains("figures/nw-parametric.txt:2: committed `")
            && text.contains(&format!("    committed: {second}\n"))
            && text.contains("|Δ| = "),
        "{text}"
    );
}

// A listing for the renderer's own tests: prints its device, draws nothing.
fn hello(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    writeln!(out, "hello")?;
    Ok(())
}

fn broken(_: &Device, _: &mut Output) -> anyhow::Result<()> {
    anyhow::bail!("the listing's own error")
}

const HELLO: Listing = Listing::new("hello", file!(), hello);

/// `render` of this workspace's book on flex, without `--force`.
fn render_flex(
    listings: &[Listing],
    figures: &Path,
) -> anyhow::Result<attention_book::Report> {
    render(
        &workspace_root(),
        listings,
        figures,
        BackendChoice::Flex,
        false,
    )
}

#[test]
fn render_skips_what_is_up_to_date_and_reruns_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    // The listing's source file, outside the figures folder.
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("hello.rs");
    fs::write(&file, "// v1").unwrap();
    let path: &'static str =
        Box::leak(file.to_string_lossy().into_owned().into_boxed_str());
    let hello = Listing::new("hello", path, hello);
    let report = render_flex(&[hello], dir.path()).unwrap();
    assert_eq!(report.ran, ["hello"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
    let again = render_flex(&[hello], dir.path()).unwrap();
    assert_eq!(
        (again.ran.len(), again.skipped),
        (0, vec!["hello".to_owned()])
    );
    // An edit to the listing's source file changes its fingerprint.
    fs::write(&file, "// v2").unwrap();
    let edited = hello;
    assert_eq!(render_flex(&[edited], dir.path()).unwrap().ran, ["hello"]);
    // A deleted output is made again, and so is one changed by hand.
    fs::remove_file(dir.path().join("hello.txt")).unwrap();
    assert_eq!(render_flex(&[edited], dir.path()).unwrap().ran, ["hello"]);
    assert!(dir.path().join("hello.txt").is_file());
    fs::write(dir.path().join("hello.txt"), "garbage").unwrap();
    assert_eq!(render_flex(&[edited], dir.path()).unwrap().ran, ["hello"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
    // A manifest line that lists no files is not trusted.
    let fingerprint =
        fingerprint(&workspace_root(), &registered(&edited), "flex").unwrap();
    fs::write(
        dir.path().join("fingerprints.txt"),
        format!("hello {fingerprint}\n"),
    )
    .unwrap();
    assert_eq!(render_flex(&[edited], dir.path()).unwrap().ran, ["hello"]);
}

fn panics(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    writeln!(out, "half")?;
    panic!("drawing went wrong")
}

#[test]
fn a_failing_listing_is_reported_by_name_writes_nothing_and_the_rest_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = Listing::new("broken", file!(), broken);
    let panicking = Listing::new("panics", file!(), panics);
    let after = Listing::new("after", file!(), hello);
    let listings = [HELLO, bad, panicking, after];
    let report = render_flex(&listings, dir.path()).unwrap();
    assert_eq!(report.ran, ["hello", "after"]);
    let failed: Vec<(&str, &str)> = report
        .failed
        .iter()
        .map(|f| (f.listing.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        failed,
        [
            ("broken", "listing `broken` failed: the listing's own error"),
            ("panics", "listing `panics` panicked: drawing went wrong"),
        ]
    );
    let mut files: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["after.txt", "fingerprints.txt", "hello.txt"]);
    assert!(!read_manifest(dir.path()).contains_key("broken"));
    // A listing that worked before and fails now keeps its committed file,
    // and says so.
    fs::write(dir.path().join("broken.txt"), "committed\n").unwrap();
    let mut manifest = fs::read_to_string(dir.path().join(MANIFEST)).unwrap();
    manifest.push_str("broken old broken.txt@0123456789abcdef\n");
    fs::write(dir.path().join(MANIFEST), manifest).unwrap();
    let report = render_flex(&[HELLO, bad], dir.path()).unwrap();
    assert_eq!(report.failed[0].kept, ["broken.txt"]);
    assert!(
        report.failed[0].to_string().ends_with(
            "its files from the last successful run are left as they were: broken.txt"
        ),
        "{}",
        report.failed[0]
    );
    let committed = fs::read_to_string(dir.path().join("broken.txt")).unwrap();
    assert_eq!(committed, "committed\n");
    // It stays stale, and a second failure still names its files.
    assert_eq!(read_manifest(dir.path())["broken"].fingerprint, FAILED);
    let report = render_flex(&[HELLO, bad], dir.path()).unwrap();
    assert_eq!(report.failed[0].kept, ["broken.txt"]);
}

#[test]
fn an_unwritable_figures_folder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the folder should be: fails even for root.
    let blocked = dir.path().join("figures");
    fs::write(&blocked, "not a folder").unwrap();
    let err = render_flex(&[HELLO], &blocked).unwrap_err();
    assert!(
        format!("{err:#}").contains("cannot create the figures folder"),
        "{err:#}"
    );
    assert_eq!(fs::read_to_string(&blocked).unwrap(), "not a folder");
}

/// Runs the `listing-runner` binary with `args`; returns whether it
/// succeeded and what it wrote on stderr.
fn listings_cli(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_listing-runner"))
        .args(args)
        // flex's fingerprints (scripts/gpu-check sets another device)
        .env_remove("D2L_DEVICE")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A copy of the committed figures folder.
fn copy_of_figures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(figures()).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    dir
}

#[test]
fn the_fix_a_failed_check_names_fixes_it() {
    let dir = copy_of_figures();
    let folder = dir.path().to_str().unwrap();
    let bmm = dir.path().join("nw-bmm.txt");
    fs::write(
        &bmm,
        fs::read_to_string(&bmm).unwrap().replace("14.5", "15.5"),
    )
    .unwrap();
    let (ok, stderr) = listings_cli(&["check", "--figures", folder, "nw-bmm"]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("nw-bmm.txt:3: committed `15.5`, new `14.5`")
            && stderr.contains(&format!(
                "-- render --force --figures {folder} nw-bmm`"
            ))
            && stderr.contains("1 problem(s)"),
        "{stderr}"
    );
    let (ok, stderr) =
        listings_cli(&["render", "--force", "--figures", folder, "nw-bmm"]);
    assert!(ok && stderr.contains("1 listings run"), "{stderr}");
    assert!(listings_cli(&["check", "--figures", folder, "nw-bmm"]).0);
    // --force writes what the code makes, even over a file that agrees
    // within tolerance (here one damaged in its last digit).
    let exact = fs::read_to_string(&bmm).unwrap();
    fs::write(&bmm, exact.replace("14.5", "14.6")).unwrap();
    assert!(listings_cli(&["check", "--figures", folder, "nw-bmm"]).0);
    assert!(
        listings_cli(&["render", "--force", "--figures", folder, "nw-bmm"]).0
    );
    assert_eq!(fs::read_to_string(&bmm).unwrap(), exact);
    let (ok, stderr) =
        listings_cli(&["render", "--figures", folder, "no-such-listing"]);
    assert!(
        !ok && stderr.contains(
            "no listing `no-such-listing`; the listings are: qkv-cues"
        ),
        "{stderr}"
    );
}

/// What the preprocessor reads back from the runner: its report (JSON),
/// with what ran and what was up to date.
#[test]
fn render_writes_its_report_for_the_preprocessor() {
    let dir = copy_of_figures();
    let folder = dir.path().to_str().unwrap();
    fs::remove_file(dir.path().join("nw-bmm.txt")).unwrap();
    let file = dir.path().join("report.json");
    let report = file.to_str().unwrap();
    let args = ["render", "--figures", folder, "--report", report];
    let (ok, stderr) =
        listings_cli(&[&args[..], &["nw-bmm", "qkv-cues"]].concat());
    assert!(ok, "{stderr}");
    let report: attention_book::Report =
        serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        (report.ran, report.skipped, report.failed),
        (
            vec!["nw-bmm".to_owned()],
            vec!["qkv-cues".to_owned()],
            vec![]
        )
    );
}

#[test]
fn ci_s_folder_comparison_passes_noise_and_fails_real_changes() {
    let dir = copy_of_figures();
    let (committed, new) = (figures(), dir.path().to_owned());
    // The trainings' texts are checked by their facts, not compared:
    // they keep their words (an exact BLEU stays 1.000 on any machine).
    let facts: Vec<String> = listings::all()
        .iter()
        .filter(|l| matches!(l.check, Check::Facts(_)))
        .map(|l| format!("{}.txt", l.name))
        .collect();
    for entry in fs::read_dir(&new).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if facts.contains(&name) {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, perturb(&text, Format::of(&name))).unwrap();
    }
    // Another machine's adjective for "he's calm ." is fine.
    let train = new.join("bahdanau-train.txt");
    let text =
        fs::read_to_string(committed.join("bahdanau-train.txt")).unwrap();
    let calm = text.lines().nth(3).unwrap();
    let other = "he's calm . => il est riche ., bleu 0.658";
    fs::write(&train, text.replace(calm, other)).unwrap();
    let args = |a: &Path, b: &Path| {
        [
            a.to_str().unwrap().to_owned(),
            b.to_str().unwrap().to_owned(),
        ]
    };
    let [a, b] = args(&committed, &new);
    let (ok, stderr) = listings_cli(&["compare", &a, &b]);
    assert!(ok, "{stderr}");
    let loss = new.join("nw-parametric.txt");
    let text = fs::read_to_string(&loss).unwrap();
    fs::write(&loss, text.replacen("loss 2", "loss 3", 1)).unwrap();
    fs::remove_file(new.join("qkv-eye.svg")).unwrap();
    let text = fs::read_to_string(&train).unwrap();
    fs::write(&train, text.replace("je suis chez moi .,", "je suis .,"))
        .unwrap();
    let manifest = new.join("fingerprints.txt");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, format!("garbage\n{text}")).unwrap();
    let (ok, stderr) = listings_cli(&["compare", &a, &b]);
    assert!(!ok, "{stderr}");
    for expected in [
        "qkv-eye.svg: removed",
        "nw-parametric.txt:3: committed `27.",
        "bahdanau-train.txt: `i'm home .` must come out as",
        "fingerprints.txt: a malformed or repeated line",
    ] {
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
}
