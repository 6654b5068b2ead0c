//! The committed figures and captured outputs are what the code makes now.

use std::fs;
use std::path::{Path, PathBuf};

use attention_book::{content_hash, read_manifest, render};
use d2l_attention::Backend;
use d2l_attention::listing::{self, Listing, Output};

fn figures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../figures")
}

const HOW_TO_FIX: &str = "run `mdbook build` (or `cargo run --release -p attention-book --bin mdbook-listings -- render`) and commit figures/";

#[test]
fn every_listing_was_rendered_from_the_current_code() {
    let manifest = read_manifest(&figures());
    for l in listing::all() {
        let entry = manifest
            .get(l.name)
            .unwrap_or_else(|| panic!("`{}` was never rendered; {HOW_TO_FIX}", l.name));
        assert_eq!(
            entry.fingerprint,
            l.fingerprint(Backend::Flex),
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
                "figures/{f} was changed by hand; {HOW_TO_FIX}"
            );
        }
    }
}

#[test]
fn captured_outputs_match_what_the_listings_print_and_draw() {
    let device = Backend::Flex.device().unwrap();
    let mut seen = Vec::new();
    for l in listing::all().into_iter().filter(|l| l.rerun_in_tests) {
        let out = l.execute(&device).unwrap();
        let again = l.execute(&device).unwrap();
        assert_eq!(
            out.files(l.name),
            again.files(l.name),
            "listing `{}` does not print and draw the same twice",
            l.name
        );
        for (name, contents) in out.files(l.name) {
            let committed = fs::read_to_string(figures().join(&name)).unwrap_or_default();
            assert!(
                committed == contents,
                "figures/{name} no longer matches what listing `{}` makes; {HOW_TO_FIX}",
                l.name
            );
            assert!(!seen.contains(&name), "two listings write figures/{name}");
            seen.push(name);
        }
    }
}

// A listing for the renderer's own tests: prints its device, draws nothing.
fn hello(_: &burn::tensor::Device, out: &mut Output) -> anyhow::Result<()> {
    use std::fmt::Write;
    writeln!(out, "hello")?;
    Ok(())
}

fn broken(_: &burn::tensor::Device, _: &mut Output) -> anyhow::Result<()> {
    anyhow::bail!("the listing's own error")
}

const HELLO: Listing = Listing::new("hello", &["v1"], hello);

#[test]
fn render_skips_what_is_up_to_date_and_reruns_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let report = render(&[HELLO], dir.path(), Backend::Flex, false).unwrap();
    assert_eq!(report.ran, ["hello"]);
    assert_eq!(
        fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
    let again = render(&[HELLO], dir.path(), Backend::Flex, false).unwrap();
    assert_eq!(
        (again.ran.len(), again.skipped),
        (0, vec!["hello".to_owned()])
    );
    // An edit to the listing's source changes its fingerprint.
    let edited = Listing {
        sources: &["v2"],
        ..HELLO
    };
    assert_eq!(
        render(&[edited], dir.path(), Backend::Flex, false)
            .unwrap()
            .ran,
        ["hello"]
    );
    // A deleted output is made again, and so is one changed by hand.
    fs::remove_file(dir.path().join("hello.txt")).unwrap();
    assert_eq!(
        render(&[edited], dir.path(), Backend::Flex, false)
            .unwrap()
            .ran,
        ["hello"]
    );
    assert!(dir.path().join("hello.txt").is_file());
    fs::write(dir.path().join("hello.txt"), "garbage").unwrap();
    assert_eq!(
        render(&[edited], dir.path(), Backend::Flex, false)
            .unwrap()
            .ran,
        ["hello"]
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hello\n"
    );
    // A manifest line that lists no files is not trusted.
    let fingerprint = edited.fingerprint(Backend::Flex);
    fs::write(
        dir.path().join("fingerprints.txt"),
        format!("hello {fingerprint}\n"),
    )
    .unwrap();
    assert_eq!(
        render(&[edited], dir.path(), Backend::Flex, false)
            .unwrap()
            .ran,
        ["hello"]
    );
}

#[test]
fn a_failing_listing_stops_the_render_with_its_name_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = Listing::new("broken", &[], broken);
    let err = render(&[HELLO, bad], dir.path(), Backend::Flex, false).unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("listing `broken` failed") && msg.contains("the listing's own error"),
        "{msg}"
    );
    let mut files: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["fingerprints.txt", "hello.txt"]);
    assert!(!read_manifest(dir.path()).contains_key("broken"));
}

#[test]
fn an_unwritable_figures_folder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the folder should be: fails even for root.
    let blocked = dir.path().join("figures");
    fs::write(&blocked, "not a folder").unwrap();
    let err = render(&[HELLO], &blocked, Backend::Flex, false).unwrap_err();
    assert!(
        format!("{err:#}").contains("cannot create the figures folder"),
        "{err:#}"
    );
    assert_eq!(fs::read_to_string(&blocked).unwrap(), "not a folder");
}
