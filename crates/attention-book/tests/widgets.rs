//! The widgets' committed WebAssembly build (src/widgets/pkg/) is up to
//! date: built from the inputs as they are now, and the files the manifest
//! names. Rebuild it with `scripts/build-widgets` (README, "The widgets").

use attention_book::fingerprint::workspace_root;
use attention_book::widgets::{MANIFEST, problems};

#[test]
fn the_widgets_webassembly_build_is_up_to_date() {
    let found = problems(&workspace_root()).unwrap();
    assert!(
        found.is_empty(),
        "{}\nRebuild it with scripts/build-widgets and commit src/widgets/pkg \
         with {MANIFEST}",
        found.join("\n")
    );
}

#[test]
fn the_four_widgets_are_on_their_pages_each_with_the_script_once() {
    let root = workspace_root();
    let mut kinds = Vec::new();
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let widgets =
            text.matches("<div class=\"widget\" data-widget=").count();
        let scripts = text
            .matches("<script defer src=\"widgets/widgets.js\">")
            .count();
        assert_eq!(scripts, widgets.min(1), "{}", path.display());
        for part in text.split("data-widget=\"").skip(1) {
            kinds.push(part.split('"').next().unwrap().to_owned());
        }
    }
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "bahdanau",
            "nadaraya-watson",
            "positional-encoding",
            "transformer"
        ]
    );
}
