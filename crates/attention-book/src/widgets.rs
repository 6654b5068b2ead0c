//! The widgets' WebAssembly build, an output like the figures: the
//! developer builds it (`scripts/build-widgets`) and commits it under
//! [`PKG`] with a manifest ([`MANIFEST`]) recording the fingerprint of its
//! inputs and the SHA-256 of each file; CI never builds it, and fails
//! ([`problems`]) when the inputs or the files no longer match.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fingerprint::{
    LIBRARY, dependencies, digest, module_files, modules_after,
};

/// The built files' folder, relative to the workspace root.
pub const PKG: &str = "src/widgets/pkg";
/// The manifest, relative to the workspace root.
pub const MANIFEST: &str = "src/widgets/pkg/BUILD.json";
/// The built files: the module and wasm-bindgen's JavaScript glue.
pub const OUTPUTS: [&str; 2] =
    ["attention_widgets_bg.wasm", "attention_widgets.js"];
/// The bindings' code: every library module it names as
/// `d2l_attention::module`, and every module those name in turn (as a
/// listing's fingerprint follows them), are inputs too.
pub const BINDINGS: &str = "crates/attention-widgets/src/lib.rs";
/// The other inputs: the bindings crate (manifest, lock file, build
/// settings, code), the workspace's and the library's manifests, the
/// library's crate root, plotting and device code, the committed models the
/// module carries, and the script that builds it (its wasm-bindgen
/// version and flags).
pub const INPUTS: &[&str] = &[
    "Cargo.toml",
    "scripts/build-widgets",
    "crates/attention-widgets/Cargo.toml",
    "crates/attention-widgets/Cargo.lock",
    "crates/attention-widgets/.cargo/config.toml",
    "crates/attention-widgets/src",
    "crates/d2l-attention/Cargo.toml",
    "crates/d2l-attention/src/lib.rs",
    "crates/d2l-attention/src/plot",
    "crates/d2l-attention/src/device.rs",
    "models/bahdanau-fra-eng.bpk",
    "models/transformer-fra-eng.bpk",
];

/// The fingerprint of the build's inputs under `root`.
///
/// # Errors
/// When an input cannot be read (naming it).
pub fn inputs_fingerprint(root: &Path) -> anyhow::Result<String> {
    let bindings = fs::read_to_string(root.join(BINDINGS))
        .with_context(|| format!("cannot read `{BINDINGS}`"))?;
    let mut files = BTreeSet::new();
    for module in modules_after(&bindings, "d2l_attention::") {
        let library = Path::new(LIBRARY).join(&module);
        for file in module_files(root, &library)? {
            files.extend(dependencies(root, &file)?);
        }
    }
    for input in INPUTS {
        let found = module_files(root, Path::new(input))?;
        anyhow::ensure!(!found.is_empty(), "no input `{input}`");
        files.extend(found);
    }
    digest(root, &[b"widgets"], &files)
}

/// The manifest of the build under `root` as it is now: the inputs'
/// fingerprint, and each output's size and SHA-256.
///
/// # Errors
/// When an input or output cannot be read (naming it).
pub fn manifest(root: &Path) -> anyhow::Result<Value> {
    let mut files = serde_json::Map::new();
    for name in OUTPUTS {
        let path = root.join(PKG).join(name);
        let bytes = fs::read(&path)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let sha256 = format!("{:x}", Sha256::digest(&bytes));
        files.insert(
            name.to_owned(),
            json!({ "bytes": bytes.len(), "sha256": sha256 }),
        );
    }
    Ok(json!({ "inputs": inputs_fingerprint(root)?, "files": files }))
}

/// What differs between the committed manifest and the build as it is
/// now, one line each; empty when the build is up to date.
///
/// # Errors
/// When a file cannot be read (naming it).
pub fn problems(root: &Path) -> anyhow::Result<Vec<String>> {
    let path = root.join(MANIFEST);
    let text = fs::read_to_string(&path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let committed: Value = serde_json::from_str(&text)
        .with_context(|| format!("`{}` is not JSON", path.display()))?;
    let now = manifest(root)?;
    let mut found = Vec::new();
    if committed["inputs"] != now["inputs"] {
        found.push(format!(
            "the widgets' inputs changed since `{PKG}` was built"
        ));
    }
    for name in OUTPUTS {
        if committed["files"][name] != now["files"][name] {
            found.push(format!("`{PKG}/{name}` is not the file built"));
        }
    }
    Ok(found)
}
