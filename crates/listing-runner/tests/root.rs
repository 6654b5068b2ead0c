//! The runner works on the book whose root it is given, and stops, saying
//! why, when it was compiled from another checkout (as cargo may hand one
//! checkout's build to another that shares its `CARGO_TARGET_DIR`).

use std::process::Command;

#[test]
fn a_runner_built_elsewhere_stops_with_a_message() {
    let other = tempfile::tempdir().unwrap();
    for command in [&["render"][..], &["check", "qkv-cues"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_listing-runner"))
            .arg("--root")
            .arg(other.path())
            .args(command)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        let other = other.path().canonicalize().unwrap();
        assert!(
            err.contains("was compiled from")
                && err.contains(&format!(
                    "not from the book at `{}`",
                    other.display()
                ))
                && err.contains("cargo clean --release -p listing-runner"),
            "{err}"
        );
    }
    // nothing was written there
    assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0);
}

/// `compare` reads only the two folders it is given: it runs outside any
/// book (no book.toml above the current folder).
#[test]
fn compare_runs_outside_a_book() {
    let outside = tempfile::tempdir().unwrap();
    let (a, b) = (outside.path().join("a"), outside.path().join("b"));
    for dir in [&a, &b] {
        std::fs::create_dir(dir).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_listing-runner"))
        .current_dir(outside.path())
        .arg("compare")
        .args([&a, &b])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("agrees with"), "{err}");
}
