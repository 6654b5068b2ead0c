//! Every number a page's prose quotes agrees with what the book's code
//! prints or states: one of the page's captured outputs (`figures/*.txt`
//! it includes), the source files it shows listings from (a configuration
//! or a checked bound it states), or the output printed in a committed
//! benchmark report it names by path (the Performance page: every report,
//! whole). The few
//! numbers quoted from elsewhere (a paper, d2l's printed run, a version)
//! are listed in `quoted-numbers.txt` with their source; "from test `name`"
//! there names the test that asserts the number.

mod common;

use std::fs;
use std::path::Path;

use attention_book::compare::numbers;
use attention_book::prose::quoted_numbers;
use common::{book, includes, pages};

/// What a page's numbers may come from: (name, text) of each output and
/// source file it includes from (whole: a bound a listing's facts check
/// stands there too), and the fenced output of the benchmark reports it
/// names by path (every report, whole, for the Performance page).
fn sources(page: &str, text: &str) -> Vec<(String, String)> {
    let src = book().join("src");
    let mut found = Vec::new();
    for (path, _) in includes(text) {
        if found.iter().any(|(p, _)| *p == path) {
            continue;
        }
        let file = fs::read_to_string(src.join(&path))
            .unwrap_or_else(|e| panic!("{page}: {path}: {e}"));
        found.push((path, file));
    }
    let reports = book().join("crates/d2l-attention/benches/reports");
    for entry in fs::read_dir(&reports).unwrap() {
        let path = entry.unwrap().path();
        let name = path.strip_prefix(book()).unwrap().display().to_string();
        let report = fs::read_to_string(&path).unwrap();
        if page == "performance.md" {
            found.push((name, report));
        } else if text.contains(&name) {
            found.push((name, fenced(&report)));
        }
    }
    found
}

/// The lines of `report`'s fenced blocks: what a run printed, not what
/// the report's prose says of it.
fn fenced(report: &str) -> String {
    let mut inside = false;
    let mut kept = String::new();
    for line in report.lines() {
        if line.starts_with("```") {
            inside = !inside;
        } else if inside {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// One line of `quoted-numbers.txt`: a page, a number as written there,
/// and where it comes from.
struct Mark {
    page: String,
    number: String,
    source: String,
}

fn marks() -> Vec<Mark> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("quoted-numbers.txt");
    fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut words = l.splitn(3, ' ');
            let (page, number, source) =
                (words.next(), words.next(), words.next());
            match (page, number, source) {
                (Some(p), Some(n), Some(s)) => Mark {
                    page: p.to_owned(),
                    number: n.to_owned(),
                    source: s.trim().to_owned(),
                },
                _ => panic!(
                    "quoted-numbers.txt: `{l}` is not `PAGE NUMBER SOURCE`"
                ),
            }
        })
        .collect()
}

/// Whether the function `name` in the workspace's code states `number`:
/// one of the numbers in its body (from its name to its closing brace;
/// `49_449` reads as 49449) has exactly its value.
fn test_asserts(name: &str, number: &str) -> bool {
    let needle = format!("fn {name}(");
    let value: f64 = number.replace(',', "").parse().unwrap();
    let mut stack = vec![book().join("crates")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            if let Some(start) = text.find(&needle) {
                let body = function_body(&text[start..]).replace('_', "");
                return numbers(&body).contains(&value);
            }
        }
    }
    false
}

/// `code` from its start to the brace that closes its first `{`.
fn function_body(code: &str) -> &str {
    let mut depth = 0;
    for (i, c) in code.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => return &code[..=i],
            '}' => depth -= 1,
            _ => {}
        }
    }
    code
}

#[test]
fn every_number_in_the_prose_agrees_with_an_output_or_is_marked() {
    let marks = marks();
    let mut problems = Vec::new();
    let mut used = vec![false; marks.len()];
    for (path, text) in pages() {
        let page = path.file_name().unwrap().to_string_lossy().into_owned();
        let sources = sources(&page, &text);
        let printed: Vec<f64> =
            sources.iter().flat_map(|(_, text)| numbers(text)).collect();
        let quoted = quoted_numbers(&text);
        let mut marked = 0;
        for q in &quoted {
            if printed.iter().any(|&v| q.agrees_with(v)) {
                continue;
            }
            match marks
                .iter()
                .position(|m| m.page == page && m.number == q.text)
            {
                Some(i) => {
                    used[i] = true;
                    marked += 1;
                }
                None => {
                    let mut outputs: Vec<&str> = sources
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .filter(|n| !n.ends_with(".rs"))
                        .collect();
                    outputs.dedup();
                    problems.push(format!(
                        "{page}:{}: {} in “{}” agrees with none of the page's outputs ({}) and listings; \
                         correct the sentence, or list the number in quoted-numbers.txt with its source",
                        q.line,
                        q.text,
                        q.sentence,
                        outputs.join(", ")
                    ));
                }
            }
        }
        eprintln!("{page}: {} numbers quoted, {marked} marked", quoted.len());
    }
    for (mark, used) in marks.iter().zip(&used) {
        if !used {
            problems.push(format!(
                "quoted-numbers.txt: {} {} is not needed (not on the page, or it agrees with an output)",
                mark.page, mark.number
            ));
        }
        if let Some(rest) = mark.source.strip_prefix("from test `") {
            let name = rest.split('`').next().unwrap();
            if !test_asserts(name, &mark.number) {
                problems.push(format!(
                    "quoted-numbers.txt: no test `{name}` that states {}",
                    mark.number
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
