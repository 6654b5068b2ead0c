//! The book's listing table, read from the library's source text rather
//! than linked: the preprocessor decides what is stale without compiling
//! burn. `listings::all()` in `listings/mod.rs` names each chapter's
//! `LISTINGS` in reading order (each chapter a file `listings/NAME.rs`);
//! each chapter's `pub const LISTINGS: &[Listing] = &[…];` registers its
//! listings as `Listing::new("name", file!(), function)` or as a
//! `Listing { name: "name", …, run: function }` literal, `name` first.
//! The listing runner's tests check that this table equals
//! `listings::all()`, so a registration in another form fails them.

use std::fs;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

/// The listings folder, relative to the workspace root.
pub const LISTINGS: &str = "crates/d2l-attention/src/listings";

/// A listing as its chapter registers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registered {
    /// Its name: the stem of its captured text file `figures/<name>.txt`.
    pub name: String,
    /// The file that defines it, relative to the workspace root (what
    /// `file!()` gives the library).
    pub file: String,
}

/// Every listing registered under `root`, in reading order.
///
/// # Errors
/// Naming the file when `listings/mod.rs` or a chapter file it names
/// cannot be read, or when `all()` names no chapter.
///
/// # Examples
/// ```
/// use attention_book::fingerprint::workspace_root;
/// use attention_book::table::registered;
///
/// let table = registered(&workspace_root()).unwrap();
/// assert_eq!(table[0].name, "qkv-cues");
/// assert_eq!(table[0].file, "crates/d2l-attention/src/listings/qkv.rs");
/// ```
pub fn registered(root: &Path) -> anyhow::Result<Vec<Registered>> {
    let module = format!("{LISTINGS}/mod.rs");
    let text = read(root, &module)?;
    let all = text
        .find("pub fn all()")
        .and_then(|at| text[at..].find("\n}").map(|end| &text[at..at + end]))
        .ok_or_else(|| anyhow::anyhow!("`{module}` has no `pub fn all()`"))?;
    let chapters = Regex::new(r"(\w+)::LISTINGS")?;
    let mut table = Vec::new();
    for chapter in chapters.captures_iter(all) {
        let file = format!("{LISTINGS}/{}.rs", &chapter[1]);
        for (name, _) in registrations(&read(root, &file)?) {
            table.push(Registered {
                name,
                file: file.clone(),
            });
        }
    }
    anyhow::ensure!(!table.is_empty(), "`{module}`'s `all()` names no listing");
    Ok(table)
}

/// A chapter's table: `pub const LISTINGS: &[Listing] = &[` up to its `];`.
static TABLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)pub const LISTINGS: &\[Listing\]\s*=\s*&\[(.*?)\];")
        .expect("a valid pattern")
});

/// One registration in a table: `Listing::new("name", file!(), function)`
/// (rustfmt may add a trailing comma) or a `Listing { name: "name", …,
/// run: function }` literal, `name` first.
static REGISTRATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?s)Listing::new\(\s*"([a-z0-9-]+)",\s*file!\(\),\s*([\w:]+),?\s*\)|Listing\s*\{\s*name:\s*"([a-z0-9-]+)",.*?run:\s*([\w:]+),?\s*\}"#,
    )
    .expect("a valid pattern")
});

/// The (name, function) of each listing a chapter file registers in its
/// `LISTINGS` table, in order; none when it has no table.
///
/// # Examples
/// ```
/// use attention_book::table::registrations;
///
/// let chapter = "pub const LISTINGS: &[Listing] = &[\n    \
///     Listing::new(\"a\", file!(), demo_a),\n    \
///     Listing::new(\n        \"b-with-a-long-name\",\n        file!(),\n        \
///     super::demo_b,\n    ),\n    \
///     Listing {\n        name: \"c\",\n        file: file!(),\n        \
///     check: Check::Facts(facts),\n        run: demo_c,\n    },\n];\n\n\
///     const TEST: Listing = Listing::new(\"not-in-the-table\", file!(), t);\n";
/// let found: Vec<(String, String)> = registrations(chapter);
/// let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
/// assert_eq!(names, ["a", "b-with-a-long-name", "c"]);
/// assert_eq!(found[1].1, "super::demo_b");
/// assert_eq!(found[2].1, "demo_c");
/// ```
pub fn registrations(text: &str) -> Vec<(String, String)> {
    let Some(table) = TABLE.captures(text) else {
        return Vec::new();
    };
    REGISTRATION
        .captures_iter(&table[1])
        .filter_map(|c| {
            let name = c.get(1).or(c.get(3))?.as_str().to_owned();
            let function = c.get(2).or(c.get(4))?.as_str().to_owned();
            Some((name, function))
        })
        .collect()
}

fn read(root: &Path, file: &str) -> anyhow::Result<String> {
    let path = root.join(file);
    fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", path.display()))
}
